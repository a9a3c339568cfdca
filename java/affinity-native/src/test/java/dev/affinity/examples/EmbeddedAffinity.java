package dev.affinity.examples;

import dev.affinity.admission.ClientRequestGuard;
import dev.affinity.admission.RequestAdmission;
import dev.affinity.config.AffinitySettings;
import dev.affinity.config.Location;
import dev.affinity.config.RouterConfig;
import dev.affinity.config.ScheduleStyle;
import dev.affinity.config.SubagentScope;
import dev.affinity.conversation.ConversationResolver;
import dev.affinity.conversation.ConversationSettings;
import dev.affinity.conversation.HeaderSource;
import dev.affinity.disagg.DisaggService;
import dev.affinity.disagg.DisaggSettings;
import dev.affinity.disagg.RequestIds;
import dev.affinity.frontend.ClientSink;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.nativebridge.HandoffDomain;
import dev.affinity.nativebridge.NativeExecutor;
import dev.affinity.nativebridge.worker.BpeTokenCodec;
import dev.affinity.nativebridge.worker.NativeWorker;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.worker.EncodedChunk;
import dev.affinity.worker.EncodedResponse;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Router;
import dev.affinity.routing.RouterContext;
import dev.affinity.routing.RouterFactory;
import dev.affinity.timer.RealScheduler;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Embedding Affinity in a Java service, without the HTTP server (docs/embedding.md): in-process CPU
 * executors as workers, Affinity's routers, and the disaggregated orchestration, driven directly.
 */
public final class EmbeddedAffinity implements AutoCloseable {
  /** The in-process context hand-off of this deployment's workers: one per deployment. */
  private final HandoffDomain handoff = new HandoffDomain();
  private final List<NativeWorker> workers = new ArrayList<>();
  private final RealScheduler scheduler = new RealScheduler();
  private final RequestAdmission admission;
  private final DisaggService service;
  private final ProtocolCodec codec = new ProtocolCodec();

  public EmbeddedAffinity() {
    BpeTokenCodec tokenizer = new BpeTokenCodec("cl100k_base");
    String executorConfig = "{\"num_ranks\": 2, \"clock\": {\"mode\": \"real\", \"time_scale\": 0.01}}";
    Router ctx = router("affinity", Fleet.CONTEXT);
    Router gen = router("affinity", Fleet.GENERATION);
    for (int i = 0; i < 2; i++) {
      NativeWorker w = new NativeWorker("ctx-" + i, NativeExecutor.create("sim", executorConfig, handoff), tokenizer, 64,
          handoff);
      workers.add(w);
      ctx.addWorker(w);
      w.onKvEvents(events -> ctx.onKvEvents(w.id(), events));  // the prefix index follows the real caches
    }
    NativeWorker g = new NativeWorker("gen-0", NativeExecutor.create("sim", executorConfig, handoff), tokenizer, 64,
        handoff);
    workers.add(g);
    gen.addWorker(g);
    ConversationResolver resolver = new ConversationResolver(new ConversationSettings(
        AffinitySettings.DEFAULT_SESSION_HEADERS, Optional.of("X-Dynamo-Parent-Session-ID"), SubagentScope.CONTEXT));
    admission = new RequestAdmission(ClientRequestGuard.strict(), RequestAdmission.ANY_MODEL, resolver,
        workers.get(0)::promptTokens);
    service = new DisaggService(
        new DisaggSettings(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1, Duration.ofSeconds(60), -1),
        ctx, gen, new RequestIds(0), scheduler);
  }

  private static Router router(String type, Fleet fleet) {
    return new RouterFactory().create(new RouterConfig(type, Location.unknown("code"), Map.of(), Map.of()),
        fleet == Fleet.CONTEXT ? "context_servers" : "generation_servers", RouterContext.of(fleet));
  }

  /** The answer to one chat completion and where it ran. */
  public record Answer(OpenAiResponse response, RouteInfo route) {}

  /** Sends a chat completion (JSON body, as an OpenAI client would) with the given headers. */
  public Answer chat(String jsonBody, Map<String, String> headers) throws Exception {
    OpenAiRequest request = codec.parseChatCompletionRequest(jsonBody.getBytes(StandardCharsets.UTF_8));
    CompletableFuture<Answer> answer = new CompletableFuture<>();
    admission.admitAndHandle(request, HeaderSource.of(headers), service, new ClientSink() {
      @Override
      public void respondEncoded(EncodedResponse encodedResponse, RouteInfo route) {
        OpenAiResponse response = encodedResponse.parsed();
        answer.complete(new Answer(response, route));
      }

      @Override
      public void fail(int status, ErrorResponse error, RouteInfo route) {
        answer.completeExceptionally(new IllegalStateException(status + ": " + error.error().message()));
      }

      @Override
      public void streamStart(RouteInfo route) {}

      @Override
      public void streamEncoded(EncodedChunk encodedChunk) {}

      @Override
      public void streamEnd(RouteInfo route) {}

      @Override
      public void abort(String reason, RouteInfo route) {
        answer.completeExceptionally(new IllegalStateException(reason));
      }

      @Override
      public void onDisconnect(Runnable callback) {}
    });
    return answer.get(60, TimeUnit.SECONDS);
  }

  @Override
  public void close() {
    workers.forEach(NativeWorker::close);
    handoff.close();
    scheduler.close();
  }

  public static void main(String[] args) throws Exception {
    try (EmbeddedAffinity affinity = new EmbeddedAffinity()) {
      String body = "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"Say hello\"}], \"max_tokens\": 8}";
      Answer parent = affinity.chat(body, Map.of("x-session-id", "agent-1"));
      Answer child = affinity.chat(body, Map.of("x-session-id", "sub-1", "X-Dynamo-Parent-Session-ID", "agent-1"));
      System.out.println("parent: " + parent.route().toHeader());
      System.out.println("child:  " + child.route().toHeader());
    }
  }
}
