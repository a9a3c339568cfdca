package dev.affinity.server.workermode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.routing.DecisionReason;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Outcome;
import dev.affinity.routing.Router;
import dev.affinity.routing.RoutingRequest;
import dev.affinity.routing.Selection;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.tokenizer.ModelTokenizer;
import dev.affinity.tokenizer.PromptRenderer;
import dev.affinity.tokenizer.TestModels;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Prefix-aware routing against workers that tokenize with a real model's tokenizer (Qwen3) and emit KV events over
 * its ids, as stock workers do: two context and one generation {@code affinity worker} processes started with
 * {@code --tokenizer}. Chats that share a long system prompt, from different clients with no conversation id, reach
 * the context worker whose KV events hold the prefix, and reuse it ({@code reused} > 0), when the frontend
 * tokenizes with the same model ({@code affinity.tokenizer}); with the frontend hashing the text's code points, as
 * without a tokenizer, the events never match and the next chat goes by load to the other worker, cold.
 * {@code track_routed_blocks: false}, so that only the workers' events can make a match.
 */
class ModelTokenizerRoutingEndToEndTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration START = Duration.ofSeconds(60);
  private static final String CONFIG = "{\"num_ranks\": 1, \"tokens_per_block\": 16, \"clock\": {\"time_scale\": 0.05}}";
  /** About 1,300 Qwen3 tokens shared by every chat. */
  private static final String SYSTEM = ("You are a coding agent. Follow the repository's conventions, run the tests "
      + "before you answer, and explain every change in one sentence.\n").repeat(40);

  private final List<WorkerProcess> processes = new ArrayList<>();
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  private AffinityServer server;

  @AfterEach
  void stop() throws Exception {
    WorkerProcess.closeAll(server, processes);
  }

  private List<WorkerProcess> startWorkers(Path tokenizer) throws Exception {
    for (String name : List.of("ctx-a", "ctx-b", "gen-a")) {
      processes.add(WorkerProcess.start(name, "--executor-json", CONFIG, "--model", "m", "--tokenizer",
          tokenizer.toString()));
    }
    for (WorkerProcess p : processes) {
      p.awaitReady(http, START);
    }
    return processes;
  }

  private void startFrontend(String router, String tokenizerLine) throws Exception {
    String yaml = """
        hostname: 127.0.0.1
        port: 8000
        context_servers:
          num_instances: 2
          urls: ["%s", "%s"]
          router: {type: %s, track_routed_blocks: false}
        generation_servers:
          urls: ["%s"]
          router: {type: round_robin}
        affinity: {model: m, debug_headers: true, request_timeout_seconds: 30%s}
        """.formatted(processes.get(0).id(), processes.get(1).id(), router, processes.get(2).id(), tokenizerLine);
    DisaggConfig cfg = ConfigLoader.parse(yaml, "model-tokenizer.yaml").config();
    server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "e2e").withPort(0));
  }

  private static String chat(int i) {
    return JSON.createObjectNode().put("model", "m").put("max_tokens", 2).set("messages", JSON.createArrayNode()
        .add(JSON.createObjectNode().put("role", "system").put("content", SYSTEM))
        .add(JSON.createObjectNode().put("role", "user").put("content", "Task " + i + ": fix the failing test.")))
        .toString();
  }

  private HttpResponse<String> post(String body) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/v1/chat/completions"))
        .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
  }

  /**
   * Waits until the context router has taken the KV events of {@code worker} that cover chat {@code i}'s prefix: a
   * probe selection with the chat's model ids matches blocks there (then it is cancelled).
   */
  private void awaitEvents(int i, String worker, int[] ids) throws InterruptedException {
    Router router = server.service().contextRouter();
    WorkerProcess.await(() -> {
      Selection s = router.select(RoutingRequest.builder(1L << 50, Fleet.CONTEXT).tokens(ids).build(), Set.of());
      boolean matched = s.worker().id().equals(worker) && s.matchedBlocks() > 0;
      s.release(Outcome.CANCELLED);
      return matched;
    }, "the context worker's KV events reach the router", Duration.ofSeconds(20));
  }

  private static int[] modelIds(ModelTokenizer tokenizer, String body) {
    return new PromptRenderer(tokenizer).encodeChat(new ProtocolCodec().parseChatCompletionRequest(
        body.getBytes(StandardCharsets.UTF_8)));
  }

  @ParameterizedTest
  @ValueSource(strings = {"kv_cache_aware", "affinity"})
  void chatsSharingAPrefixReachTheWorkerWhoseKvEventsHoldIt(String router) throws Exception {
    Path dir = TestModels.dir(TestModels.QWEN3);
    startWorkers(dir);
    startFrontend(router, ", tokenizer: \"" + dir + "\"");
    try (ModelTokenizer tokenizer = ModelTokenizer.load(dir)) {
      HttpResponse<String> first = post(chat(0));
      assertEquals(200, first.statusCode(), first.body());
      String home = WorkerProcessEndToEndTest.route(first, "ctx");
      int[] ids = modelIds(tokenizer, chat(0));
      assertEquals(ids.length, JSON.readTree(first.body()).at("/usage/prompt_tokens").asInt(),
          "the workers render and count the chat as the frontend does (its ids were sent: same render fingerprint)");
      awaitEvents(1, home, modelIds(tokenizer, chat(1)));
      for (int i = 1; i <= 3; i++) {
        HttpResponse<String> r = post(chat(i));
        assertEquals(200, r.statusCode(), r.body());
        assertEquals(home, WorkerProcessEndToEndTest.route(r, "ctx"), router + ": chat " + i + " follows its prefix");
        int reused = Integer.parseInt(WorkerProcessEndToEndTest.route(r, "reused"));
        assertTrue(reused >= ids.length / 2, router + ": chat " + i + " reused the shared prefix, got " + reused);
        JsonNode cached = JSON.readTree(r.body()).at("/usage/prompt_tokens_details/cached_tokens");
        assertTrue(cached.isMissingNode() || cached.asInt() > 0, r.body());
      }
    }
    // the context workers' KV events feed the prefix-aware router; the generation fleet's round_robin reads none, so
    // its worker's are not polled (the frontend would parse every block its KV cache stores, to throw them away)
    List<dev.affinity.worker.Worker> context = server.service().contextRouter().workers();
    assertEquals(3, server.workers().size());
    for (dev.affinity.worker.Worker w : server.workers()) {
      assertEquals(context.contains(w), ((dev.affinity.server.worker.HttpWorker) w).isKvEventPolling(), w.id());
    }
  }

  @Test
  void hashingTheTextsCodePointsMissesTheWorkersEvents() throws Exception {
    Path dir = TestModels.dir(TestModels.QWEN3);
    startWorkers(dir);
    startFrontend("kv_cache_aware", "");  // no tokenizer: text is hashed as code points
    try (ModelTokenizer tokenizer = ModelTokenizer.load(dir)) {
      HttpResponse<String> first = post(chat(0));
      assertEquals(200, first.statusCode(), first.body());
      String home = WorkerProcessEndToEndTest.route(first, "ctx");
      awaitEvents(1, home, modelIds(tokenizer, chat(1)));  // the events are there, over the model's ids
      Router router = server.service().contextRouter();
      long prefixDecisions = router.stats().decisions().getOrDefault(DecisionReason.PREFIX, 0L);
      List<String> placed = new ArrayList<>();
      for (int i = 1; i <= 2; i++) {  // sequential, so each is a tie that round robin breaks: one lands elsewhere
        HttpResponse<String> r = post(chat(i));
        assertEquals(200, r.statusCode(), r.body());
        String ctx = WorkerProcessEndToEndTest.route(r, "ctx");
        placed.add(ctx);
        if (!ctx.equals(home)) {
          assertEquals("0", WorkerProcessEndToEndTest.route(r, "reused"), "the prefix is prefilled again: " + r.headers());
        }
      }
      assertEquals(prefixDecisions, router.stats().decisions().getOrDefault(DecisionReason.PREFIX, 0L),
          "code-point block keys match none of the workers' events");
      assertTrue(placed.stream().anyMatch(w -> !w.equals(home)), "a chat went by load to the cold worker: " + placed);
    }
  }
}
