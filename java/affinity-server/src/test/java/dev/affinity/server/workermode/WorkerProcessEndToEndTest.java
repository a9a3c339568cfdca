package dev.affinity.server.workermode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.routing.Router;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.http.AccessRecord;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.worker.Worker;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Worker mode across processes: three {@code affinity worker} JVMs (one context, two generation), an
 * {@link AffinityServer} in this JVM routing to them over HTTP, streaming and non-streaming requests,
 * then faults: a generation worker killed mid-stream, the next requests retried on the survivor, and
 * 503 once no generation worker is left — with every router selection released and the context
 * worker's held KV freed by its own timeout.
 */
class WorkerProcessEndToEndTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static final String KEY = "e2e-shared-key";
  static final Duration START = Duration.ofSeconds(60);
  /** Contexts held 15 s of executor time = 3 s of wall time (time_scale 0.2; the hold runs on the executor's clock). */
  static final String CTX_CONFIG = """
      {"num_ranks": 2, "tokens_per_block": 16, "clock": {"time_scale": 0.2}, "context_hold_timeout_ms": 3000}""";
  /** Real time, so that a long stream is still running when its worker is killed. */
  static final String GEN_CONFIG = """
      {"num_ranks": 2, "tokens_per_block": 16, "clock": {"time_scale": 1.0}}""";

  private final List<WorkerProcess> processes = new ArrayList<>();
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  private final LinkedBlockingQueue<AccessRecord> accessLog = new LinkedBlockingQueue<>();
  private AffinityServer server;

  @AfterEach
  void stop() throws Exception {
    WorkerProcess.closeAll(server, processes);
  }

  private WorkerProcess launch(String name, String config) throws IOException {
    WorkerProcess p = WorkerProcess.start(name, "--executor-json", config, "--auth-key", KEY, "--model", "m");
    processes.add(p);
    return p;
  }

  private HttpRequest.Builder request(String path, String body, String... headers) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path))
        .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body));
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return b;
  }

  private HttpResponse<String> post(String path, String body, String... headers) throws Exception {
    return http.send(request(path, body, headers).build(), HttpResponse.BodyHandlers.ofString());
  }

  static String route(HttpResponse<?> r, String key) {
    for (String part : r.headers().firstValue("x-affinity-route").orElse("").split("; ")) {
      if (part.startsWith(key + "=")) {
        return part.substring(key.length() + 1);
      }
    }
    return null;
  }

  /** Waits for a state the system reaches on its own (a bound for a broken build, not a timing assertion). */
  static void await(BooleanSupplier condition, String what) throws InterruptedException {
    WorkerProcess.await(condition, what, Duration.ofSeconds(20));
  }

  static long outstanding(Router r) {
    return r.stats().outstandingSelections();
  }

  /** A streamed answer as read by a client: its data lines, and whether it ended cleanly. */
  record Stream(int status, List<String> data, boolean done, String error, String gen) {}

  /**
   * Reads a streamed answer; {@code afterFirstChunk} gets the generation worker the route header names
   * once the first data line has arrived.
   */
  private Stream stream(String path, String body, Consumer<String> afterFirstChunk) throws Exception {
    HttpResponse<InputStream> r = http.send(request(path, body).build(), HttpResponse.BodyHandlers.ofInputStream());
    List<String> data = new ArrayList<>();
    boolean done = false;
    String error = null;
    try (BufferedReader reader = new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
      for (String line = reader.readLine(); line != null; line = reader.readLine()) {
        if (line.equals("data: [DONE]")) {
          done = true;
        } else if (line.startsWith("data: ")) {
          data.add(line.substring(6));
          if (data.size() == 1) {
            afterFirstChunk.accept(route(r, "gen"));
          }
        }
      }
    } catch (IOException e) {
      error = e.toString(); // a cut stream: the connection closed without the last chunk
    }
    return new Stream(r.statusCode(), data, done, error, route(r, "gen"));
  }

  @Test
  void aFrontendServesThroughWorkerProcessesAndSurvivesLosingThem() throws Exception {
    WorkerProcess ctx = launch("ctx-0", CTX_CONFIG);
    WorkerProcess gen0 = launch("gen-0", GEN_CONFIG);
    WorkerProcess gen1 = launch("gen-1", GEN_CONFIG);
    for (WorkerProcess p : processes) {
      p.awaitReady(http, START);
    }
    String yaml = """
        hostname: 127.0.0.1
        port: 8000
        internal_request_auth_key: "%s"
        max_retries: 3
        context_servers:
          num_instances: 1
          urls: ["%s"]
          router: {type: round_robin}
        generation_servers:
          num_instances: 2
          urls: ["%s", "%s"]
          router: {type: round_robin}
        affinity: {model: m, debug_headers: true, request_timeout_seconds: 30}
        """.formatted(KEY, ctx.id(), gen0.id(), gen1.id());
    DisaggConfig cfg = ConfigLoader.parse(yaml, "workers.yaml").config();
    server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "e2e").withPort(0).withAccessLog(accessLog::add));
    assertEquals(3, server.workers().size(), "every worker process joined");
    for (Worker w : server.workers()) {
      assertTrue(w.info().ranksVisible(), w.id());
      assertEquals(2, w.info().routableRanks(), "the router chooses among each worker's ranks");
    }
    Router ctxRouter = server.service().contextRouter();
    Router genRouter = server.service().generationRouter();

    // ---- non-streaming and streaming requests through both fleets ----
    for (int i = 0; i < 2; i++) {
      HttpResponse<String> r = post("/v1/completions",
          "{\"model\": \"m\", \"prompt\": \"The quick brown fox jumps over the lazy dog, again and again.\","
              + " \"max_tokens\": 6}", "X-Session-ID", "agent-" + i);
      assertEquals(200, r.statusCode(), r.body());
      JsonNode body = JSON.readTree(r.body());
      assertFalse(body.at("/choices/0/text").asText().isEmpty(), r.body());
      assertTrue(body.at("/choices/0/disaggregated_params").isMissingNode(), "hand-off state stays internal");
      assertTrue(body.at("/usage/prompt_tokens").asInt() > 0, r.body());
      assertEquals(ctx.id(), route(r, "ctx"));
      assertNotNull(route(r, "ctx_rank"), "the context worker reports the rank it ran on");
      assertTrue(List.of(gen0.id(), gen1.id()).contains(route(r, "gen")), r.headers().toString());
    }
    Stream chat = stream("/v1/chat/completions",
        "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"Hello there\"}], \"max_tokens\": 5,"
            + " \"stream\": true, \"stream_options\": {\"include_usage\": true}}", gen -> { });
    assertEquals(200, chat.status());
    assertTrue(chat.done(), "a clean stream ends with [DONE]: " + chat);
    JsonNode last = JSON.readTree(chat.data().get(chat.data().size() - 1));
    assertEquals("length", last.at("/choices/0/finish_reason").asText(), chat.data().toString());
    assertEquals(5, last.at("/usage/completion_tokens").asInt(), "every token, the context's first one included");
    // the generation workers, in other processes, told the context worker each context was pulled
    // (ctx_info_endpoint, POST /release_context): it holds none, long before its 60 s hold timeout
    await(() -> {
      try {
        return ctx.metric(http, "affinity_worker_kv_used_blocks") == 0;
      } catch (Exception e) {
        return false;
      }
    }, "the context worker freed every pulled context");
    assertTrue(ctx.metric(http, "affinity_worker_context_tokens_computed_total") > 0,
        "the context worker counts the prompt tokens it prefilled");

    // ---- a generation worker killed mid-stream: the stream continues on the other one ----
    Map<String, WorkerProcess> gens = Map.of(gen0.id(), gen0, gen1.id(), gen1);
    String[] victim = new String[1];
    accessLog.clear();
    Stream cut = stream("/v1/completions",
        "{\"model\": \"m\", \"prompt\": \"Tell a long story.\", \"max_tokens\": 400, \"stream\": true,"
            + " \"stream_options\": {\"include_usage\": true}}", gen -> {
          victim[0] = gen;
          try {
            gens.get(gen).kill();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
    assertEquals(200, cut.status());
    assertTrue(gens.containsKey(victim[0]), "the route header names the streaming generation worker: " + victim[0]);
    WorkerProcess survivor = gens.get(victim[0]) == gen0 ? gen1 : gen0;
    assertTrue(cut.done(), "resumed on the other worker, the stream ends with [DONE]: " + cut.error());
    assertTrue(cut.data().stream().noneMatch(d -> d.startsWith("{\"error\":")), cut.data().toString());
    assertEquals(400, JSON.readTree(cut.data().get(cut.data().size() - 1)).at("/usage/completion_tokens").asInt(),
        "one answer: the tokens streamed before the cut and after");
    AccessRecord cutRecord = accessLog.stream().filter(a -> Boolean.TRUE.equals(a.stream())).reduce((a, b) -> b)
        .orElseThrow();
    assertEquals(AccessRecord.OK, cutRecord.outcome(), cutRecord.toString());
    assertEquals(1, cutRecord.retries(), "the resume is a retry: " + cutRecord);
    assertEquals(survivor.id(), cutRecord.genWorker(), "the access log names the worker that finished the stream");

    // ---- the next requests are retried on the surviving generation worker ----
    accessLog.clear();
    for (int i = 0; i < 4; i++) {
      HttpResponse<String> r = post("/v1/completions",
          "{\"model\": \"m\", \"prompt\": \"retry me\", \"max_tokens\": 4}");
      assertEquals(200, r.statusCode(), r.body());
      assertEquals(survivor.id(), route(r, "gen"));
    }
    Stream retried = stream("/v1/chat/completions",
        "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"again\"}], \"max_tokens\": 3,"
            + " \"stream\": true}", gen -> { });
    assertTrue(retried.done(), retried.toString());
    assertEquals(survivor.id(), retried.gen());
    int retries = 0;
    for (AccessRecord r = accessLog.poll(); r != null; r = accessLog.poll()) {
      retries += r.retries();
    }
    Worker killed = server.workers().stream().filter(w -> w.id().equals(victim[0])).findFirst().orElseThrow();
    assertTrue(retries > 0 || !killed.isAlive(),
        "round robin sent some of them to the killed worker and retried them, unless a health check had removed it");

    // ---- no generation worker left: 503, cleanly ----
    survivor.kill();
    HttpResponse<String> none = post("/v1/completions", "{\"model\": \"m\", \"prompt\": \"anyone?\", \"max_tokens\": 4}");
    assertEquals(503, none.statusCode(), none.body());
    assertEquals("service_unavailable_error", JSON.readTree(none.body()).at("/error/type").asText());
    assertEquals("1", none.headers().firstValue("retry-after").orElse(null), "every 503 says when to come back");
    HttpResponse<String> noneStreamed = post("/v1/completions",
        "{\"model\": \"m\", \"prompt\": \"anyone?\", \"max_tokens\": 4, \"stream\": true}");
    assertEquals(503, noneStreamed.statusCode(), noneStreamed.body());

    // ---- nothing leaks ----
    await(() -> outstanding(ctxRouter) == 0 && outstanding(genRouter) == 0,
        "every router selection is released (context " + outstanding(ctxRouter) + ", generation "
            + outstanding(genRouter) + ")");
    await(() -> {
      try {
        return ctx.metric(http, "affinity_worker_kv_used_blocks") == 0;
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    }, "the context worker frees every held context on its own timeout");
    assertTrue(ctx.isAlive(), ctx.output());
    assertEquals(List.of(), processes.stream().filter(p -> p != ctx).filter(WorkerProcess::isAlive)
        .map(WorkerProcess::name).collect(Collectors.toList()));
  }
}
