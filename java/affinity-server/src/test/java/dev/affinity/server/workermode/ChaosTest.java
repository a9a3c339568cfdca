package dev.affinity.server.workermode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
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
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Chaos under load: four worker processes (two context, two generation) behind a frontend, mixed streaming
 * and non-streaming requests from several clients while a context worker and a generation worker are
 * killed and restarted on their ports. Every request must end complete or with a clear error: a JSON error
 * body, or for a stream that had started, an error event as its last event (never a stream cut without
 * [DONE] or an error). Afterwards every router selection is released and every worker's KV is back to
 * empty. The load runs for a fixed number of requests per phase (no timing assertion; the bounds only stop
 * a broken build).
 */
class ChaosTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static final String KEY = "chaos-key";
  static final Duration START = Duration.ofSeconds(60);
  /** Context workers: contexts a generation worker in another process took over are freed after 1 s of wall time. */
  static final String CTX = """
      {"num_ranks": 2, "tokens_per_block": 16, "clock": {"time_scale": 0.2}, "context_hold_timeout_ms": 1000}""";
  /** Generation workers at half of modelled time: a 120-token stream lasts long enough to be cut. */
  static final String GEN = """
      {"num_ranks": 2, "tokens_per_block": 16, "clock": {"time_scale": 0.5}}""";

  private final List<WorkerProcess> processes = new ArrayList<>();
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
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

  private WorkerProcess restart(WorkerProcess old, String config) throws Exception {
    WorkerProcess p = WorkerProcess.startOnPort(old.name(), old.port(), "--executor-json", config, "--auth-key", KEY,
        "--model", "m");
    processes.add(p);
    p.awaitReady(http, START);
    return p;
  }

  /** How one request ended, as its client saw it. */
  enum End { COMPLETE, CLEAR_ERROR, VIOLATION }

  private final List<String> violations = java.util.Collections.synchronizedList(new ArrayList<>());

  private End violation(String what) {
    violations.add(what);
    return End.VIOLATION;
  }

  private End send(int i) {
    boolean stream = i % 2 == 0;
    String body = "{\"model\": \"m\", \"prompt\": \"Request " + i + " of the chaos run: tell a story.\", \"max_tokens\": "
        + (stream ? 120 : 8) + (stream ? ", \"stream\": true" : "") + "}";
    HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/v1/completions"))
        .timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json")
        .header("X-Session-ID", "agent-" + (i % 7)).POST(HttpRequest.BodyPublishers.ofString(body)).build();
    try {
      if (!stream) {
        HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
        JsonNode json = JSON.readTree(r.body());
        if (r.statusCode() == 200) {
          return json.at("/choices/0/text").isTextual() ? End.COMPLETE : violation("200 without text: " + r.body());
        }
        return json.at("/error/message").asText().isEmpty() ? violation(r.statusCode() + ": " + r.body()) : End.CLEAR_ERROR;
      }
      HttpResponse<InputStream> r = http.send(request, HttpResponse.BodyHandlers.ofInputStream());
      if (r.statusCode() != 200) {
        String text = new String(r.body().readAllBytes(), StandardCharsets.UTF_8);
        return JSON.readTree(text).at("/error/message").asText().isEmpty() ? violation(r.statusCode() + ": " + text)
            : End.CLEAR_ERROR;
      }
      String last = null;
      boolean done = false;
      try (BufferedReader reader = new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
        for (String line = reader.readLine(); line != null; line = reader.readLine()) {
          if (line.equals("data: [DONE]")) {
            done = true;
          } else if (line.startsWith("data: ")) {
            last = line.substring(6);
          }
        }
      }
      if (done) {
        return End.COMPLETE;
      }
      return last != null && last.startsWith("{\"error\":") ? End.CLEAR_ERROR : violation("stream cut after " + last);
    } catch (IOException e) {
      return violation("request " + i + (stream ? " (stream)" : "") + ": " + e);  // cut without an answer or an error event
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return End.VIOLATION;
    }
  }

  @Test
  void killsAndRestartsLoseNoRequestSilently() throws Exception {
    WorkerProcess ctx0 = launch("ctx-0", CTX);
    WorkerProcess ctx1 = launch("ctx-1", CTX);
    WorkerProcess gen0 = launch("gen-0", GEN);
    WorkerProcess gen1 = launch("gen-1", GEN);
    for (WorkerProcess p : processes) {
      p.awaitReady(http, START);
    }
    DisaggConfig cfg = ConfigLoader.parse("""
        hostname: 127.0.0.1
        port: 8000
        internal_request_auth_key: "%s"
        max_retries: 3
        context_servers: {num_instances: 2, urls: ["%s", "%s"], router: {type: conversation}}
        generation_servers: {num_instances: 2, urls: ["%s", "%s"], router: {type: load_balancing}}
        affinity: {model: m, request_timeout_seconds: 30}
        """.formatted(KEY, ctx0.id(), ctx1.id(), gen0.id(), gen1.id()), "chaos.yaml").config();
    server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "chaos").withPort(0).withAccessLog(AccessLog.none()));

    Map<End, AtomicInteger> ends = new ConcurrentHashMap<>();
    for (End e : End.values()) {
      ends.put(e, new AtomicInteger());
    }
    AtomicInteger next = new AtomicInteger();
    AtomicBoolean running = new AtomicBoolean(true);
    ExecutorService clients = Executors.newFixedThreadPool(6);
    List<Future<?>> futures = new ArrayList<>();
    for (int c = 0; c < 6; c++) {
      futures.add(clients.submit(() -> {
        while (running.get()) {
          ends.get(send(next.getAndIncrement())).incrementAndGet();
        }
      }));
    }
    // Phases by requests sent, not by time: load, a context worker killed, restarted, a generation worker
    // killed, restarted, then load on the restored fleet.
    awaitRequests(next, 24);
    ctx0.kill();
    awaitRequests(next, 48);
    restart(ctx0, CTX);
    awaitRequests(next, 72);
    gen1.kill();
    awaitRequests(next, 96);
    restart(gen1, GEN);
    awaitRequests(next, 130);
    running.set(false);
    for (Future<?> f : futures) {
      f.get(120, TimeUnit.SECONDS);
    }
    clients.shutdown();

    int violations = ends.get(End.VIOLATION).get();
    assertEquals(0, violations, "every request ends complete or with a clear error: " + ends + " " + this.violations);
    assertTrue(ends.get(End.COMPLETE).get() > ends.get(End.CLEAR_ERROR).get(), "most requests complete: " + ends);
    await(() -> server.service().contextRouter().stats().outstandingSelections() == 0
        && server.service().generationRouter().stats().outstandingSelections() == 0, "every selection is released");
    for (WorkerProcess p : processes) {
      if (p.isAlive()) {
        await(() -> usedBlocks(p) == 0, p.name() + "'s KV is back to empty");
      }
    }
  }

  private static void awaitRequests(AtomicInteger sent, int n) throws InterruptedException {
    await(() -> sent.get() >= n, n + " requests sent");
  }

  /** A worker's used KV blocks; -1 while it does not answer (just restarted). */
  private double usedBlocks(WorkerProcess p) {
    try {
      return p.metric(http, "affinity_worker_kv_used_blocks");
    } catch (IOException e) {
      return -1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    }
  }

  /** Waits for a state the system reaches on its own (a bound for a broken build, not a timing assertion). */
  static void await(BooleanSupplier condition, String what) throws InterruptedException {
    WorkerProcess.await(condition, what, Duration.ofSeconds(60));
  }
}
