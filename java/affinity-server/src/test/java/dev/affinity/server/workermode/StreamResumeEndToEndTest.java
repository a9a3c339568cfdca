package dev.affinity.server.workermode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.http.AccessRecord;
import dev.affinity.server.http.FrontendOptions;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A stream whose generation worker process is killed mid-way continues on the other generation worker: the client
 * reads one stream (one id, no error event, {@code [DONE]}) whose usage counts the whole answer. The workers stream
 * text and the frontend has no tokenizer, so the context worker tokenizes what was streamed
 * ({@code POST /_internal/tokenize}).
 */
class StreamResumeEndToEndTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static final Duration START = Duration.ofSeconds(60);
  static final String CTX = """
      {"num_ranks": 1, "tokens_per_block": 16, "clock": {"time_scale": 0.2}, "context_hold_timeout_ms": 1000}""";
  /** Generation at half the modelled speed: a 200-token stream lasts seconds, long enough to be cut after 5 chunks. */
  static final String GEN = """
      {"num_ranks": 1, "tokens_per_block": 16, "clock": {"time_scale": 2.0}}""";
  static final int MAX_TOKENS = 200;

  private final List<WorkerProcess> processes = new ArrayList<>();
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  private AffinityServer server;
  private final Queue<AccessRecord> records = new ConcurrentLinkedQueue<>();

  @AfterEach
  void stop() throws Exception {
    WorkerProcess.closeAll(server, processes);
  }

  private WorkerProcess launch(String name, String config) throws Exception {
    WorkerProcess p = WorkerProcess.start(name, "--executor-json", config, "--model", "m");
    processes.add(p);
    return p;
  }

  private HttpRequest completion(String extra) {
    String body = "{\"model\": \"m\", \"prompt\": \"Tell the story of the worker that died mid-sentence.\","
        + " \"max_tokens\": " + MAX_TOKENS + ", \"ignore_eos\": true" + extra + "}";
    return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/v1/completions"))
        .timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)).build();
  }

  @Test
  void aStreamWhoseGenerationWorkerIsKilledEndsCompleteOnTheOther() throws Exception {
    WorkerProcess ctx = launch("ctx-0", CTX);
    List<WorkerProcess> gens = List.of(launch("gen-0", GEN), launch("gen-1", GEN));
    for (WorkerProcess p : processes) {
      p.awaitReady(http, START);
    }
    DisaggConfig cfg = ConfigLoader.parse("""
        hostname: 127.0.0.1
        port: 8000
        max_retries: 2
        context_servers: {num_instances: 1, urls: ["%s"]}
        generation_servers: {num_instances: 2, urls: ["%s", "%s"], router: {type: round_robin}}
        affinity: {model: m, request_timeout_seconds: 60}
        """.formatted(ctx.id(), gens.get(0).id(), gens.get(1).id()), "resume.yaml").config();
    server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "resume").withPort(0).withDebugHeaders(true)
        .withAccessLog(records::add));

    // The prompt's size as the workers count it, from an answer nothing interrupted.
    HttpResponse<String> whole = http.send(completion(""), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, whole.statusCode(), whole.body());
    int promptTokens = JSON.readTree(whole.body()).at("/usage/prompt_tokens").asInt();
    assertTrue(promptTokens > 0);

    HttpResponse<InputStream> r = http.send(completion(", \"stream\": true, \"stream_options\": {\"include_usage\": true}"),
        HttpResponse.BodyHandlers.ofInputStream());
    assertEquals(200, r.statusCode());
    String route = r.headers().firstValue("x-affinity-route").orElseThrow();
    WorkerProcess serving = gens.stream().filter(g -> route.contains("gen=" + g.id().replaceFirst("^http://", "")))
        .findFirst().orElseThrow(() -> new AssertionError("no generation worker in " + route));

    Set<String> ids = new HashSet<>();
    StringBuilder text = new StringBuilder();
    JsonNode usage = null;
    String error = null;
    boolean done = false;
    int chunks = 0;
    try (BufferedReader reader = new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
      for (String line = reader.readLine(); line != null; line = reader.readLine()) {
        if (line.equals("data: [DONE]")) {
          done = true;
        } else if (line.startsWith("data: ")) {
          JsonNode chunk = JSON.readTree(line.substring(6));
          if (chunk.has("error")) {
            error = chunk.toString();
            continue;
          }
          ids.add(chunk.path("id").asText());
          if (chunk.path("choices").size() > 0) {
            text.append(chunk.at("/choices/0/text").asText());
          }
          if (chunk.hasNonNull("usage")) {
            usage = chunk.get("usage");
          }
          if (++chunks == 5) {
            serving.kill();  // mid-stream: the rest must come from the other worker
          }
        }
      }
    }

    assertFalse(serving.isAlive());
    assertEquals(null, error, "no error event");
    assertTrue(done, "the stream ends with [DONE]");
    assertEquals(1, ids.size(), "one stream id: " + ids);
    assertNotNull(usage, "the final usage chunk");
    assertEquals(MAX_TOKENS, usage.path("completion_tokens").asInt(), "the streamed tokens and the rest: " + usage);
    assertEquals(promptTokens, usage.path("prompt_tokens").asInt(), "the client's prompt, not the continuation's");
    assertTrue(text.length() > 0);
    // The access record: the stream was continued (one retry) and finished on the other worker.
    WorkerProcess.await(() -> records.stream().anyMatch(a -> Boolean.TRUE.equals(a.stream())), "the stream's record",
        Duration.ofSeconds(60));
    AccessRecord streamed = records.stream().filter(a -> Boolean.TRUE.equals(a.stream())).findFirst().orElseThrow();
    assertEquals(AccessRecord.OK, streamed.outcome(), streamed.toString());
    assertEquals(1, streamed.retries(), streamed.toString());
    WorkerProcess other = gens.get(0) == serving ? gens.get(1) : gens.get(0);
    assertEquals(other.id(), streamed.genWorker(), streamed.toString());
    WorkerProcess.await(() -> server.service().contextRouter().stats().outstandingSelections() == 0
        && server.service().generationRouter().stats().outstandingSelections() == 0, "every selection is released",
        Duration.ofSeconds(60));
  }
}
