package dev.affinity.server.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.models.responses.Response;
import com.openai.models.responses.ResponseCreateParams;
import com.openai.models.responses.ResponseStreamEvent;
import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.nativebridge.HandoffDomain;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.server.workermode.WorkerServer;
import dev.affinity.server.workermode.WorkerSettings;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Responses API in front of remote workers (two Affinity worker processes' servers in this JVM): the worker's
 * OpenAI chat stream, relayed as bytes, is reframed into {@code response.*} events, and a whole answer is converted
 * into a response object.
 */
class ResponsesRemoteWorkersTest {
  static final List<AutoCloseable> OPEN = new ArrayList<>();
  static final HandoffDomain HANDOFF = new HandoffDomain();
  static AffinityServer server;
  static OpenAIClient client;

  @BeforeAll
  static void start() throws Exception {
    WorkerServer ctx = worker("ctx");
    WorkerServer gen = worker("gen");
    String yaml = """
        hostname: 127.0.0.1
        port: 8000
        context_servers: {num_instances: 1, urls: ["127.0.0.1:%d"], router: {type: conversation}}
        generation_servers: {num_instances: 1, urls: ["127.0.0.1:%d"], router: {type: load_balancing}}
        affinity: {model: m}
        """.formatted(ctx.port(), gen.port());
    DisaggConfig cfg = ConfigLoader.parse(yaml, "remote.yaml").config();
    server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "t").withPort(0).withAccessLog(AccessLog.none()));
    OPEN.add(0, server);
    client = OpenAIOkHttpClient.builder().baseUrl("http://127.0.0.1:" + server.port() + "/v1").apiKey("unused")
        .maxRetries(0).build();
  }

  static WorkerServer worker(String name) throws Exception {
    WorkerServer w = WorkerServer.start(AnthropicRemoteWorkersTest.ZERO_COST, WorkerSettings.defaults().withName(name),
        FrontendOptions.defaults().withAccessLog(AccessLog.none()), "test", HANDOFF);
    OPEN.add(0, w);
    return w;
  }

  @AfterAll
  static void stop() throws Exception {
    client.close();
    for (AutoCloseable c : OPEN) {
      c.close();
    }
    HANDOFF.close();
  }

  static ResponseCreateParams params(String input, long maxOutputTokens) {
    return ResponseCreateParams.builder().model("m").instructions("You are terse.").input(input)
        .maxOutputTokens(maxOutputTokens).store(false).build();
  }

  @Test
  void aStreamRelayedFromAWorkerIsReframedIntoResponseEvents() {
    StringBuilder deltas = new StringBuilder();
    Response[] last = new Response[1];
    int events = 0;
    try (StreamResponse<ResponseStreamEvent> stream = client.responses().createStreaming(params("stream", 5))) {
      for (ResponseStreamEvent e : (Iterable<ResponseStreamEvent>) stream.stream()::iterator) {
        e.validate();
        e.outputTextDelta().ifPresent(d -> deltas.append(d.delta()));
        e.incomplete().ifPresent(d -> last[0] = d.response());
        events++;
      }
    }
    Response r = last[0];
    assertEquals(5, r.usage().orElseThrow().outputTokens());
    assertTrue(r.usage().orElseThrow().inputTokens() > 0, r.usage().toString());
    assertEquals(deltas.toString(), r.output().get(0).asMessage().content().get(0).asOutputText().text());
    assertTrue(events >= 10, "created, in_progress, item and part added, deltas, done events, incomplete: " + events);
  }

  @Test
  void aWholeAnswerFromAWorkerIsAResponseObject() {
    Response r = client.responses().create(params("whole", 3));
    r.validate();
    assertEquals(3, r.usage().orElseThrow().outputTokens());
    assertTrue(r.output().get(0).isMessage());
  }
}
