package dev.affinity.server.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.anthropic.client.AnthropicClient;
import com.anthropic.client.okhttp.AnthropicOkHttpClient;
import com.anthropic.core.http.StreamResponse;
import com.anthropic.helpers.MessageAccumulator;
import com.anthropic.models.messages.Message;
import com.anthropic.models.messages.MessageCountTokensParams;
import com.anthropic.models.messages.MessageCreateParams;
import com.anthropic.models.messages.RawMessageStreamEvent;
import com.anthropic.models.messages.StopReason;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.nativebridge.HandoffDomain;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.server.workermode.WorkerServer;
import dev.affinity.server.workermode.WorkerSettings;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Messages API in front of remote workers (two Affinity worker processes' servers in this JVM): the worker's
 * OpenAI stream, relayed as bytes, is reframed into Anthropic's events, and count_tokens is forwarded to a context
 * worker, which serves {@code POST /v1/messages/count_tokens} itself.
 */
class AnthropicRemoteWorkersTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static final String ZERO_COST = """
      {"num_ranks": 2, "timing": {"iteration_overhead_us": 0, "prefill_us_per_token": 0, "prefill_us_per_token_sq": 0,
       "decode_base_us": 0, "decode_us_per_seq": 0, "decode_us_per_kv_token": 0, "transfer_latency_us": 0}}""";
  static final List<AutoCloseable> OPEN = new ArrayList<>();
  /** The two worker servers share this process, so they hand contexts over in one domain. */
  static final HandoffDomain HANDOFF = new HandoffDomain();
  static WorkerServer ctx;
  static AffinityServer server;
  static AnthropicClient client;

  @BeforeAll
  static void start() throws Exception {
    ctx = worker("ctx");
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
    client = AnthropicOkHttpClient.builder().baseUrl("http://127.0.0.1:" + server.port()).apiKey("unused")
        .maxRetries(0).build();
  }

  static WorkerServer worker(String name) throws Exception {
    WorkerServer w = WorkerServer.start(ZERO_COST, WorkerSettings.defaults().withName(name),
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

  static MessageCreateParams params(String user, long maxTokens) {
    return MessageCreateParams.builder().model("m").maxTokens(maxTokens).system("You are terse.").addUserMessage(user)
        .build();
  }

  @Test
  void aStreamRelayedFromAWorkerIsReframedIntoAnthropicsEvents() {
    MessageAccumulator acc = MessageAccumulator.create();
    int events = 0;
    try (StreamResponse<RawMessageStreamEvent> stream = client.messages().createStreaming(params("stream", 5))) {
      for (RawMessageStreamEvent e : (Iterable<RawMessageStreamEvent>) stream.stream()::iterator) {
        acc.accumulate(e);
        events++;
      }
    }
    Message m = acc.message();
    assertEquals(StopReason.MAX_TOKENS, m.stopReason().orElseThrow());
    assertEquals(5, m.usage().outputTokens());
    assertTrue(m.usage().inputTokens() > 0, m.usage().toString());
    assertTrue(events >= 6, "start, block start, deltas, block stop, delta, stop: " + events);
  }

  @Test
  void countTokensIsForwardedToAContextWorkerAndMatchesTheMessagesUsage() throws Exception {
    MessageCountTokensParams p = MessageCountTokensParams.builder().model("m").system("You are terse.")
        .addUserMessage("count these tokens").build();
    long forwarded = client.messages().countTokens(p).inputTokens();
    Message m = client.messages().create(params("count these tokens", 2));
    assertEquals(m.usage().inputTokens() + m.usage().cacheReadInputTokens().orElse(0L), forwarded);

    // the worker process serves the endpoint itself
    HttpResponse<String> direct = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + ctx.port() + "/v1/messages/count_tokens"))
        .header("content-type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"model\": \"m\", \"system\": \"You are terse.\","
            + " \"messages\": [{\"role\": \"user\", \"content\": \"count these tokens\"}]}")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(200, direct.statusCode(), direct.body());
    assertEquals(forwarded, JSON.readTree(direct.body()).get("input_tokens").asLong());
  }
}
