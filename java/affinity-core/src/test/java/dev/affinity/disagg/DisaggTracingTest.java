package dev.affinity.disagg;

import static dev.affinity.disagg.DisaggFakes.context;
import static dev.affinity.disagg.DisaggFakes.failing;
import static dev.affinity.disagg.DisaggFakes.generation;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.affinity.admission.ClientRequestGuard;
import dev.affinity.admission.PromptTokenizer;
import dev.affinity.admission.RequestAdmission;
import dev.affinity.config.AffinitySettings;
import dev.affinity.config.Location;
import dev.affinity.config.RouterConfig;
import dev.affinity.config.ScheduleStyle;
import dev.affinity.config.SubagentScope;
import dev.affinity.conversation.ConversationResolver;
import dev.affinity.conversation.ConversationSettings;
import dev.affinity.conversation.HeaderSource;
import dev.affinity.disagg.DisaggFakes.RecordingSink;
import dev.affinity.disagg.DisaggFakes.ScriptedWorker;
import dev.affinity.frontend.AdmittedRequest;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Router;
import dev.affinity.routing.RouterContext;
import dev.affinity.routing.RouterFactory;
import dev.affinity.routing.Selection;
import dev.affinity.tracing.RequestTrace;
import dev.affinity.tracing.RequestTracer;
import dev.affinity.worker.TraceContext;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerReport;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** The orchestration's tracing hooks: what a request's trace hears, in order, and the context each leg carries. */
class DisaggTracingTest {
  static final String TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  /** Records the hooks; each leg hands on a context naming its fleet and attempt. */
  static final class RecordingTracer implements RequestTracer {
    final List<String> events = new CopyOnWriteArrayList<>();

    @Override
    public RequestTrace start(AdmittedRequest request) {
      events.add("start " + request.resolution().conversationId());
      return new RequestTrace() {
        @Override
        public Routing routing(Fleet fleet) {
          return new Routing() {
            @Override
            public void selected(Selection sel) {
              events.add("routed " + fleet + " " + sel.worker().id());
            }

            @Override
            public void noWorker(String message) {
              events.add("no worker " + fleet);
            }
          };
        }

        @Override
        public LegTrace legSent(Fleet fleet, long attempt, Selection sel) {
          events.add("sent " + fleet + " " + sel.worker().id());
          String span = fleet == Fleet.CONTEXT ? "00000000000000c1" : "00000000000000e1";
          TraceContext ctx = new TraceContext("00-4bf92f3577b34da6a3ce929d0e0e4736-" + span + "-01", null);
          return new LegTrace() {
            @Override
            public TraceContext context() {
              return ctx;
            }

            @Override
            public void completed(WorkerReport report) {
              events.add("completed " + fleet + " " + sel.worker().id());
            }

            @Override
            public void failed(WorkerFailure failure) {
              events.add("failed " + fleet + " " + sel.worker().id() + " " + failure.kind());
            }
          };
        }

        @Override
        public void retried(int retries, Fleet fleet, String workerId, WorkerFailure failure) {
          events.add("retry " + retries + " " + fleet + " " + workerId);
        }

        @Override
        public void ended(int status, String error, RouteInfo route) {
          events.add("ended " + status);
        }
      };
    }
  }

  final RecordingTracer tracer = new RecordingTracer();

  void handle(RequestTracer t, List<? extends Worker> ctx, List<? extends Worker> gen, HeaderSource headers,
      RecordingSink sink) {
    Router ctxRouter = new RouterFactory().create(new RouterConfig("round_robin", Location.unknown("t"), Map.of(), Map.of()),
        "context_servers", RouterContext.of(Fleet.CONTEXT));
    Router genRouter = new RouterFactory().create(new RouterConfig("round_robin", Location.unknown("t"), Map.of(), Map.of()),
        "generation_servers", RouterContext.of(Fleet.GENERATION));
    ctx.forEach(ctxRouter::addWorker);
    gen.forEach(genRouter::addWorker);
    DisaggService service = new DisaggService(new DisaggSettings(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1,
        Duration.ofSeconds(30), -1), ctxRouter, genRouter, new RequestIds(1), (task, delay) -> () -> { }, t, null);
    RequestAdmission admission = new RequestAdmission(ClientRequestGuard.strict(), RequestAdmission.ANY_MODEL,
        new ConversationResolver(new ConversationSettings(AffinitySettings.DEFAULT_SESSION_HEADERS, Optional.empty(),
            SubagentScope.CONTEXT)), PromptTokenizer.NONE);
    admission.admitAndHandle(new ProtocolCodec().parseCompletionRequest(
        "{\"model\": \"m\", \"prompt\": \"hello\", \"max_tokens\": 3}".getBytes(StandardCharsets.UTF_8)), headers, service, sink);
  }

  @Test
  void aRetriedRequestIsTracedHookByHook() {
    ScriptedWorker c0 = new ScriptedWorker("ctx0", failing(WorkerFailure.Kind.CONNECT, 0));
    ScriptedWorker c1 = new ScriptedWorker("ctx1", context("length"));
    ScriptedWorker g = new ScriptedWorker("gen0", generation(0));
    RecordingSink sink = new RecordingSink();
    handle(tracer, List.of(c0, c1), List.of(g), HeaderSource.of(Map.of("x-session-id", "conv-1")), sink);

    assertEquals(List.of("respond"), sink.events);
    assertEquals(List.of("start conv-1",
        "routed CONTEXT ctx0", "sent CONTEXT ctx0", "failed CONTEXT ctx0 CONNECT", "retry 1 CONTEXT ctx0",
        "routed CONTEXT ctx1", "sent CONTEXT ctx1", "completed CONTEXT ctx1",
        "routed GENERATION gen0", "sent GENERATION gen0", "completed GENERATION gen0",
        "ended 200"), tracer.events);
    assertEquals("00-4bf92f3577b34da6a3ce929d0e0e4736-00000000000000c1-01", c1.received.get(0).trace().traceparent());
    assertEquals("00-4bf92f3577b34da6a3ce929d0e0e4736-00000000000000e1-01", g.received.get(0).trace().traceparent());
  }

  @Test
  void anAnswerWithoutWhatItsLegRequiresIsTracedAsTheWorkersFailureAndRetried() {
    ScriptedWorker c0 = new ScriptedWorker("ctx0", (r, l) -> {
      l.onEncodedResponse(dev.affinity.worker.EncodedResponse.of(DisaggServiceTest.answer("A", "length", null)));  // no disaggregated_params
      l.onComplete(new dev.affinity.worker.WorkerReport(0, 0, 10, 100));
    });
    ScriptedWorker c1 = new ScriptedWorker("ctx1", context("length"));
    ScriptedWorker g = new ScriptedWorker("gen0", generation(0));
    RecordingSink sink = new RecordingSink();
    handle(tracer, List.of(c0, c1), List.of(g), HeaderSource.of(Map.of("x-session-id", "conv-1")), sink);

    assertEquals(List.of("respond"), sink.events);
    assertEquals(List.of("start conv-1",
        "routed CONTEXT ctx0", "sent CONTEXT ctx0", "failed CONTEXT ctx0 INCOMPLETE_ANSWER", "retry 1 CONTEXT ctx0",
        "routed CONTEXT ctx1", "sent CONTEXT ctx1", "completed CONTEXT ctx1",
        "routed GENERATION gen0", "sent GENERATION gen0", "completed GENERATION gen0",
        "ended 200"), tracer.events);
  }

  @Test
  void noWorkerEndsTheTraceWith503() {
    RecordingSink sink = new RecordingSink();
    handle(tracer, List.of(new ScriptedWorker("ctx0", context("length"))), List.of(), HeaderSource.NONE, sink);
    assertEquals(List.of("fail 503"), sink.events);
    assertEquals(List.of("start null", "routed CONTEXT ctx0", "sent CONTEXT ctx0", "completed CONTEXT ctx0",
        "no worker GENERATION", "ended 503"), tracer.events);
  }

  @Test
  void aClientGoingAwayEndsTheTrace() {
    ScriptedWorker c = new ScriptedWorker("ctx0", (r, l) -> { }); // never answers
    RecordingSink sink = new RecordingSink();
    handle(tracer, List.of(c), List.of(new ScriptedWorker("gen0", generation(0))), HeaderSource.NONE, sink);
    sink.disconnect.run();
    assertEquals("ended 499", tracer.events.get(tracer.events.size() - 1));
  }

  @Test
  void withoutTracingTheClientsTraceparentReachesBothLegsUnchanged() {
    ScriptedWorker c = new ScriptedWorker("ctx0", context("length"));
    ScriptedWorker g = new ScriptedWorker("gen0", generation(0));
    handle(RequestTracer.NONE, List.of(c), List.of(g),
        HeaderSource.of(Map.of("traceparent", TRACEPARENT, "tracestate", "k=v")), new RecordingSink());
    assertEquals(new TraceContext(TRACEPARENT, "k=v"), c.received.get(0).trace());
    assertEquals(new TraceContext(TRACEPARENT, "k=v"), g.received.get(0).trace());

    ScriptedWorker c2 = new ScriptedWorker("ctx0", context("length"));
    ScriptedWorker g2 = new ScriptedWorker("gen0", generation(0));
    handle(RequestTracer.NONE, List.of(c2), List.of(g2), HeaderSource.NONE, new RecordingSink());
    assertNull(c2.received.get(0).trace());
    assertNull(g2.received.get(0).trace());
  }
}
