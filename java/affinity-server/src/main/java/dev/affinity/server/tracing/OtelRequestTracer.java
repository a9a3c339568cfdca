package dev.affinity.server.tracing;

import dev.affinity.conversation.HeaderSource;
import dev.affinity.conversation.Resolution;
import dev.affinity.frontend.AdmittedRequest;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Selection;
import dev.affinity.tracing.RequestTrace;
import dev.affinity.tracing.RequestTracer;
import dev.affinity.worker.TraceContext;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerReport;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanBuilder;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The OpenTelemetry trace of each request: a {@code disaggregated_request} span (kind SERVER, as upstream's
 * {@code openai_disagg_server.py}), a child of the client's {@code traceparent} when it sent one, with a
 * {@code routing} span per router decision and a {@code context_leg} / {@code generation_leg} span (kind CLIENT) per
 * leg sent; the leg span's context is what its worker hears as {@code traceparent}. docs/tracing.md lists the spans
 * and attributes.
 */
final class OtelRequestTracer implements RequestTracer {
  /** The instrumentation scope. */
  static final String SCOPE = "dev.affinity";
  static final String REQUEST_SPAN = "disaggregated_request";
  static final String ROUTING_SPAN = "routing";
  static final String CONTEXT_SPAN = "context_leg";
  static final String GENERATION_SPAN = "generation_leg";

  static final AttributeKey<String> CONVERSATION_ID = AttributeKey.stringKey("affinity.conversation_id");
  static final AttributeKey<String> AFFINITY_ID = AttributeKey.stringKey("affinity.affinity_id");
  static final AttributeKey<String> MODEL = AttributeKey.stringKey("gen_ai.request.model");
  static final AttributeKey<Boolean> STREAM = AttributeKey.booleanKey("affinity.stream");
  static final AttributeKey<Long> REQUEST_ID = AttributeKey.longKey("affinity.request_id");
  static final AttributeKey<Long> RETRIES = AttributeKey.longKey("affinity.retries");
  static final AttributeKey<String> CTX_WORKER = AttributeKey.stringKey("affinity.ctx.worker");
  static final AttributeKey<Long> CTX_RANK = AttributeKey.longKey("affinity.ctx.rank");
  static final AttributeKey<Long> CTX_REUSED = AttributeKey.longKey("affinity.ctx.reused_tokens");
  static final AttributeKey<String> GEN_WORKER = AttributeKey.stringKey("affinity.gen.worker");
  static final AttributeKey<Long> GEN_RANK = AttributeKey.longKey("affinity.gen.rank");
  static final AttributeKey<Long> HTTP_STATUS = AttributeKey.longKey("http.response.status_code");
  static final AttributeKey<String> FLEET = AttributeKey.stringKey("affinity.fleet");
  static final AttributeKey<String> WORKER = AttributeKey.stringKey("affinity.worker");
  static final AttributeKey<Long> RANK = AttributeKey.longKey("affinity.rank");
  static final AttributeKey<Long> MATCHED_TOKENS = AttributeKey.longKey("affinity.matched_tokens");
  static final AttributeKey<String> DECISION = AttributeKey.stringKey("affinity.decision");
  static final AttributeKey<Long> ATTEMPT = AttributeKey.longKey("affinity.attempt");
  static final AttributeKey<Long> SERVED_RANK = AttributeKey.longKey("affinity.served_rank");
  static final AttributeKey<String> RANK_SOURCE = AttributeKey.stringKey("affinity.rank_source");
  static final AttributeKey<Long> REUSED_TOKENS = AttributeKey.longKey("affinity.reused_tokens");
  static final AttributeKey<Long> PROMPT_TOKENS = AttributeKey.longKey("affinity.prompt_tokens");
  static final AttributeKey<String> FAILURE = AttributeKey.stringKey("affinity.failure");

  /** Reads the W3C headers of a request (names are lower case in {@link HeaderSource}). */
  private static final TextMapGetter<HeaderSource> HEADERS = new TextMapGetter<>() {
    @Override
    public Iterable<String> keys(HeaderSource carrier) {
      return List.of(TraceContext.TRACEPARENT, TraceContext.TRACESTATE);
    }

    @Override
    public String get(HeaderSource carrier, String key) {
      return carrier == null ? null : carrier.first(key.toLowerCase(Locale.ROOT));
    }
  };

  private final Tracer tracer;

  OtelRequestTracer(Tracer tracer) {
    this.tracer = tracer;
  }

  @Override
  public RequestTrace start(AdmittedRequest request) {
    Context parent = W3CTraceContextPropagator.getInstance().extract(Context.root(), request.headers(), HEADERS);
    Resolution r = request.resolution();
    SpanBuilder b = tracer.spanBuilder(REQUEST_SPAN).setParent(parent).setSpanKind(SpanKind.SERVER)
        .setAttribute(STREAM, request.request().isStreaming());
    put(b, CONVERSATION_ID, r.conversationId());
    put(b, AFFINITY_ID, r.affinityId());
    put(b, MODEL, request.request().model());
    return new Trace(b.startSpan());
  }

  private static void put(SpanBuilder b, AttributeKey<String> key, String value) {
    if (value != null) {
      b.setAttribute(key, value);
    }
  }

  private static String fleet(Fleet fleet) {
    return fleet == Fleet.CONTEXT ? "context" : "generation";
  }

  /** One request's spans; its methods come under the request's lock, the ending possibly from another thread. */
  private final class Trace implements RequestTrace {
    private final Span root;
    private final Context rootContext;
    private final AtomicBoolean ended = new AtomicBoolean();

    Trace(Span root) {
      this.root = root;
      this.rootContext = Context.root().with(root);
    }

    @Override
    public Routing routing(Fleet fleet) {
      Span span = tracer.spanBuilder(ROUTING_SPAN).setParent(rootContext).setSpanKind(SpanKind.INTERNAL)
          .setAttribute(FLEET, fleet(fleet)).startSpan();
      return new Routing() {
        @Override
        public void selected(Selection sel) {
          span.setAttribute(WORKER, sel.worker().id());
          if (sel.rank() >= 0) {
            span.setAttribute(RANK, (long) sel.rank());
          }
          span.setAttribute(MATCHED_TOKENS, (long) sel.matchedTokens());
          if (sel.reason() != null) {
            span.setAttribute(DECISION, sel.reason().label());
          }
          span.end();
          // upstream's event names (tracing.py SpanEvents)
          root.addEvent(fleet == Fleet.CONTEXT ? "ctx_server.selected" : "gen_server.selected",
              Attributes.of(WORKER, sel.worker().id(), RANK, (long) sel.rank()));
        }

        @Override
        public void noWorker(String message) {
          span.setStatus(StatusCode.ERROR, message == null ? "no worker available" : message);
          span.end();
        }
      };
    }

    @Override
    public LegTrace legSent(Fleet fleet, long attempt, Selection sel) {
      Span span = tracer.spanBuilder(fleet == Fleet.CONTEXT ? CONTEXT_SPAN : GENERATION_SPAN).setParent(rootContext)
          .setSpanKind(SpanKind.CLIENT)
          .setAttribute(FLEET, fleet(fleet))
          .setAttribute(WORKER, sel.worker().id())
          .setAttribute(ATTEMPT, attempt)
          .startSpan();
      if (sel.rank() >= 0) {
        span.setAttribute(RANK, (long) sel.rank());
      }
      Map<String, String> headers = new HashMap<>(4);
      W3CTraceContextPropagator.getInstance().inject(Context.root().with(span), headers, Map::put);
      String parent = headers.get(TraceContext.TRACEPARENT);
      TraceContext context = parent == null ? null : new TraceContext(parent, headers.get(TraceContext.TRACESTATE));
      return new Leg(span, context);
    }

    @Override
    public void retried(int retries, Fleet fleet, String workerId, WorkerFailure failure) {
      root.setAttribute(RETRIES, (long) retries);
      root.addEvent("retry", Attributes.of(FLEET, fleet(fleet), WORKER, workerId, FAILURE, String.valueOf(failure)));
    }

    @Override
    public void streamStarted(RouteInfo route) {
      root.addEvent("stream_start");
    }

    @Override
    public void ended(int status, String error, RouteInfo route) {
      if (!ended.compareAndSet(false, true)) {
        return;
      }
      if (route != null) {
        root.setAttribute(REQUEST_ID, route.requestId());
        root.setAttribute(RETRIES, (long) route.retries());
        if (route.ctxWorker() != null) {
          root.setAttribute(CTX_WORKER, route.ctxWorker());
          root.setAttribute(CTX_RANK, (long) route.ctxRank());
          if (route.reusedTokens() >= 0) {
            root.setAttribute(CTX_REUSED, (long) route.reusedTokens());
          }
        }
        if (route.genWorker() != null) {
          root.setAttribute(GEN_WORKER, route.genWorker());
          root.setAttribute(GEN_RANK, (long) route.genRank());
        }
      }
      root.setAttribute(HTTP_STATUS, (long) status);
      if (status == 200) {
        root.setStatus(StatusCode.OK);
      } else {
        root.setStatus(StatusCode.ERROR, error == null ? "status " + status : error);
      }
      root.end();
    }
  }

  /** One leg's span. */
  private static final class Leg implements RequestTrace.LegTrace {
    private final Span span;
    private final TraceContext context;
    private final AtomicBoolean ended = new AtomicBoolean();

    Leg(Span span, TraceContext context) {
      this.span = span;
      this.context = context;
    }

    @Override
    public TraceContext context() {
      return context;
    }

    @Override
    public void completed(WorkerReport report) {
      if (!ended.compareAndSet(false, true)) {
        return;
      }
      if (report.rank() >= 0) {
        span.setAttribute(SERVED_RANK, (long) report.rank());
      }
      if (report.rankSource() != null) {
        span.setAttribute(RANK_SOURCE, report.rankSource());
      }
      if (report.reusedTokens() >= 0) {
        span.setAttribute(REUSED_TOKENS, (long) report.reusedTokens());
      }
      if (report.promptTokens() >= 0) {
        span.setAttribute(PROMPT_TOKENS, (long) report.promptTokens());
      }
      span.setStatus(StatusCode.OK);
      span.end();
    }

    @Override
    public void failed(WorkerFailure failure) {
      if (!ended.compareAndSet(false, true)) {
        return;
      }
      span.setAttribute(FAILURE, failure.kind().name().toLowerCase(Locale.ROOT));
      if (failure.status() > 0) {
        span.setAttribute(HTTP_STATUS, (long) failure.status());
      }
      if (failure.kind() != WorkerFailure.Kind.CANCELLED) {
        span.setStatus(StatusCode.ERROR, String.valueOf(failure.message()));
      }
      span.end();
    }
  }
}
