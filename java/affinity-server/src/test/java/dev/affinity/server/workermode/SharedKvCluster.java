package dev.affinity.server.workermode;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Outcome;
import dev.affinity.routing.Router;
import dev.affinity.routing.RoutingRequest;
import dev.affinity.routing.Selection;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.server.shared.NatsProcess;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.IntStream;

/**
 * The fixture of the shared KV events tests: a real nats-server, three {@code affinity worker} processes (two
 * context, one generation) and frontends with static urls and a {@code kv_cache_aware} context router, each reached
 * over HTTP. Waits are for states, with generous bounds.
 */
final class SharedKvCluster implements AutoCloseable {
  static final String KEY = "shared-kv-test-key";
  static final String EXECUTOR = "{\"num_ranks\": 1, \"tokens_per_block\": 16, \"clock\": {\"time_scale\": 0.02}}";
  static final Duration START = Duration.ofSeconds(60);
  static final Duration BOUND = Duration.ofSeconds(20);

  final List<WorkerProcess> processes = new ArrayList<>();
  final List<AffinityServer> frontends = new ArrayList<>();
  final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  NatsProcess nats;

  @Override
  public void close() throws Exception {
    try {
      for (AffinityServer f : frontends) {
        f.close();
      }
    } finally {
      WorkerProcess.closeAll(null, processes);
      if (nats != null) {
        nats.close();
      }
    }
  }

  void startWorkers(String... extra) throws Exception {
    for (String name : List.of("ctx-a", "ctx-b", "gen-a")) {
      processes.add(WorkerProcess.start(name, workerArgs(extra)));
    }
    for (WorkerProcess p : processes) {
      p.awaitReady(http, START);
    }
  }

  /** The arguments of every worker of the fixture, then {@code extra}. */
  static String[] workerArgs(String... extra) {
    List<String> args = new ArrayList<>(List.of("--executor-json", EXECUTOR, "--model", "m", "--auth-key", KEY));
    args.addAll(List.of(extra));
    return args.toArray(String[]::new);
  }

  /** The frontends' configuration: the three workers by static url, with this {@code affinity.shared_state}. */
  String yaml(String sharedState) {
    return """
        hostname: 127.0.0.1
        port: 8000
        internal_request_auth_key: "%s"
        context_servers:
          num_instances: 2
          urls: ["%s", "%s"]
          router: {type: kv_cache_aware}
        generation_servers:
          urls: ["%s"]
          router: {type: round_robin}
        affinity: {model: m, debug_headers: true, request_timeout_seconds: 30, warm_up_requests: 0,
                   shared_state: %s}
        """.formatted(KEY, processes.get(0).id(), processes.get(1).id(), processes.get(2).id(), sharedState);
  }

  AffinityServer frontend(String sharedState) throws IOException {
    DisaggConfig cfg = ConfigLoader.parse(yaml(sharedState), "shared-kv.yaml").config();
    AffinityServer f = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "shared-kv").withPort(0)
        .withAccessLog(AccessLog.none()));
    frontends.add(f);
    return f;
  }

  void startFrontends(int n) throws Exception {
    for (int i = 0; i < n; i++) {
      frontend(sharedState());
    }
  }

  /** The fixture's {@code affinity.shared_state}: its nats-server, drain leases of 2 s. */
  String sharedState() {
    return "{nats: \"" + nats.url() + "\", drain_lease_seconds: 2}";
  }

  /** A prompt of token ids, four blocks of 16, distinct per {@code seed}. */
  static int[] prompt(int seed) {
    return IntStream.range(0, 64).map(i -> 1000 + seed * 100 + i).toArray();
  }

  HttpResponse<String> complete(AffinityServer f, int[] ids) throws Exception {
    String body = "{\"model\": \"m\", \"max_tokens\": 2, \"prompt\": " + java.util.Arrays.toString(ids) + "}";
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + f.port() + "/v1/completions"))
        .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
  }

  /** The blocks of {@code ids} that {@code f}'s context router knows on {@code worker} (a probe, cancelled). */
  static int matched(AffinityServer f, String worker, int[] ids) {
    Router router = f.service().contextRouter();
    Selection s = router.select(RoutingRequest.builder(1L << 50, Fleet.CONTEXT).tokens(ids).build(), Set.of());
    int blocks = s.worker().id().equals(worker) ? s.matchedBlocks() : 0;
    s.release(Outcome.CANCELLED);
    return blocks;
  }

  /**
   * The value of {@code series} on {@code f}'s {@code /metrics}: a name (every row of it summed) or a name with its
   * labels as Prometheus writes them ({@code name{reason="bad_hmac"}}).
   */
  double metric(AffinityServer f, String series) throws Exception {
    String text = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + f.port() + "/metrics"))
        .timeout(Duration.ofSeconds(10)).GET().build(), HttpResponse.BodyHandlers.ofString()).body();
    return text.lines().filter(l -> !l.startsWith("#"))
        .filter(l -> {
          String key = l.substring(0, l.lastIndexOf(' '));
          return key.equals(series) || (!series.contains("{") && key.startsWith(series + "{"));
        })
        .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
  }

  /** The frontends that drain {@code worker} now. */
  List<AffinityServer> drainers(String worker) {
    return frontends.stream().filter(f -> f.sharedKvEvents().drains(worker)).toList();
  }

  void awaitOneDrainerEach() throws InterruptedException {
    for (WorkerProcess w : processes) {
      WorkerProcess.await(() -> drainers(w.id()).size() == 1, "one frontend drains " + w.id(), BOUND);
    }
  }

  /** Sends {@code ids} through {@code via}; waits until every frontend in {@code all} knows its blocks. */
  String sendAndAwaitEverywhere(AffinityServer via, List<AffinityServer> all, int[] ids) throws Exception {
    HttpResponse<String> r = complete(via, ids);
    assertEquals(200, r.statusCode(), r.body());
    String ctx = WorkerProcessEndToEndTest.route(r, "ctx");
    awaitEverywhere(all, ctx, ids, BOUND);
    return ctx;
  }

  /** Waits until every frontend in {@code all} knows at least three blocks of {@code ids} on {@code ctx}. */
  void awaitEverywhere(List<AffinityServer> all, String ctx, int[] ids, Duration bound) throws InterruptedException {
    for (AffinityServer f : all) {
      WorkerProcess.await(() -> matched(f, ctx, ids) >= 3, "frontend " + all.indexOf(f) + " learns the blocks on "
          + ctx, bound);
    }
  }
}
