package dev.affinity.server.workermode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The hand-off between two {@code affinity worker} processes releases each context's KV as soon as the generation
 * worker has pulled it ({@code ctx_info_endpoint}, {@code POST /release_context}), with the default hold timeout
 * (60 s): the context worker's KV holds about forty contexts, so without the release the forty-first request would
 * wait for a held context to time out, past the frontend's 20 s request timeout, and fail. 100,000 requests all
 * succeed and the context worker ends with no block in use. When the generation worker is killed, the frontend
 * releases the contexts it will never send on (signed, as a generation worker's release is), long before the hold
 * timeout.
 */
class HandoffReleaseTest {
  static final String KEY = "handoff-secret";
  static final String ZERO_TIMING = "\"timing\": {\"iteration_overhead_us\": 0, \"prefill_us_per_token\": 0, "
      + "\"prefill_us_per_token_sq\": 0, \"decode_base_us\": 0, \"decode_us_per_seq\": 0, \"decode_us_per_kv_token\": 0, "
      + "\"transfer_latency_us\": 0}";
  /** 2 ranks of 64 blocks of 16 tokens; the default context hold timeout. */
  static final String SMALL = "{\"num_ranks\": 2, \"tokens_per_block\": 16, \"kv_blocks_per_rank\": 64, " + ZERO_TIMING + "}";
  static final int REQUESTS = 100_000;
  static final int CLIENTS = 8;

  final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  final List<WorkerProcess> processes = new ArrayList<>();
  AffinityServer server;

  @AfterEach
  void stop() throws Exception {
    WorkerProcess.closeAll(server, processes);
  }

  WorkerProcess launch(String name, String executor) throws Exception {
    WorkerProcess p = WorkerProcess.start(name, "--executor-json", executor, "--auth-key", KEY, "--io-threads", "1");
    processes.add(p);
    p.awaitReady(http, Duration.ofSeconds(60));
    return p;
  }

  void frontend(WorkerProcess ctx, WorkerProcess gen) throws Exception {
    String yaml = """
        hostname: 127.0.0.1
        port: 8000
        internal_request_auth_key: "%s"
        context_servers: {num_instances: 1, urls: ["%s"], router: {type: round_robin}}
        generation_servers: {num_instances: 1, urls: ["%s"], router: {type: round_robin}}
        affinity: {model: m, request_timeout_seconds: 20}
        """.formatted(KEY, ctx.id(), gen.id());
    DisaggConfig cfg = ConfigLoader.parse(yaml, "handoff.yaml").config();
    server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "t").withPort(0).withAccessLog(AccessLog.none()));
  }

  HttpResponse<String> complete(String prompt) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/v1/completions"))
        .timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"model\": \"m\", \"max_tokens\": 2, \"prompt\": \"" + prompt + "\"}"))
        .build(), HttpResponse.BodyHandlers.ofString());
  }

  /** Waits until no block of {@code worker} is referenced by a live or held request (its /metrics). */
  void awaitNoBlockInUse(WorkerProcess worker, Duration bound) throws Exception {
    WorkerProcess.await(() -> {
      try {
        return worker.metric(http, "affinity_worker_kv_used_blocks") == 0;
      } catch (Exception e) {
        return false;
      }
    }, worker.name() + " to free every block", bound);
  }

  @Test
  void pulledContextsAreReleasedAtOnceSoSustainedLoadNeverWaitsForTheHoldTimeout() throws Exception {
    WorkerProcess ctx = launch("ctx-1", SMALL);
    WorkerProcess gen = launch("gen-1", SMALL);
    frontend(ctx, gen);
    AtomicInteger next = new AtomicInteger();
    Map<Integer, Integer> statuses = new ConcurrentHashMap<>();
    List<String> failures = java.util.Collections.synchronizedList(new ArrayList<>());
    ExecutorService clients = Executors.newFixedThreadPool(CLIENTS);
    List<Future<?>> done = new ArrayList<>();
    for (int c = 0; c < CLIENTS; c++) {
      done.add(clients.submit(() -> {
        for (int i = next.getAndIncrement(); i < REQUESTS; i = next.getAndIncrement()) {
          // a prompt of its own (about three blocks), so no context is served from another's cached blocks
          HttpResponse<String> r = complete("request " + i + " of the sustained load: a prompt of its own");
          statuses.merge(r.statusCode(), 1, Integer::sum);
          if (r.statusCode() != 200 && failures.size() < 5) {
            failures.add(r.statusCode() + " " + r.body());
          }
        }
        return null;
      }));
    }
    for (Future<?> f : done) {
      f.get();
    }
    clients.shutdown();
    assertEquals(Map.of(200, REQUESTS), statuses, "every request served: " + failures);
    // the releases are asynchronous: they land within moments, far inside the 60 s hold timeout
    awaitNoBlockInUse(ctx, Duration.ofSeconds(20));
    awaitNoBlockInUse(gen, Duration.ofSeconds(20));
  }

  @Test
  void aKilledGenerationWorkersContextsAreReleasedByTheFrontendAtOnce() throws Exception {
    // an hour's hold: only the frontend's release (POST /release_context) can free the context within the test
    String held = "{\"num_ranks\": 2, \"tokens_per_block\": 16, \"context_hold_timeout_ms\": 3600000, " + ZERO_TIMING + "}";
    WorkerProcess ctx = launch("ctx-1", held);
    WorkerProcess gen = launch("gen-1", held);
    frontend(ctx, gen);
    assertEquals(200, complete("before the kill").statusCode());
    awaitNoBlockInUse(ctx, Duration.ofSeconds(20));
    gen.kill();
    HttpResponse<String> r = complete("after the kill: nobody pulls this context, a prompt of several blocks");
    assertNotEquals(200, r.statusCode(), r.body());
    // the context leg ran and its KV was held for a generation leg that never came: the frontend releases it
    awaitNoBlockInUse(ctx, Duration.ofSeconds(30));
  }
}
