package dev.affinity.server.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.http.FrontendOptions;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The frontend's {@code /prometheus/metrics} has upstream's disaggregated-server series (names, types, buckets,
 * counted as upstream counts), beside Affinity's own; every cumulative count is a counter.
 */
class UpstreamMetricsTest {
  static AffinityServer server;
  static HttpClient http;
  static String base;
  static PrometheusText scrape;

  @BeforeAll
  static void start() throws Exception {
    String yaml = """
        hostname: 127.0.0.1
        port: 8000
        perf_metrics_max_requests: 2
        context_servers:
          num_instances: 2
          router: {type: affinity}
        generation_servers:
          num_instances: 1
          router: {type: load_balancing}
        affinity:
          model: affinity-sim
          workers:
            context: {instances: 2, ranks: 2, time_scale: 0.01, tokens_per_block: 16, kv_blocks_per_rank: 2048}
            generation: {instances: 1, ranks: 2, time_scale: 0.01, tokens_per_block: 16, kv_blocks_per_rank: 2048}
        """;
    DisaggConfig cfg = ConfigLoader.parse(yaml, "metrics").config();
    server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, AffinityServer.VERSION).withPort(0)
        .withAccessLog(dev.affinity.server.http.AccessLog.none()));
    base = "http://127.0.0.1:" + server.port();
    http = HttpClient.newHttpClient();
    String prompt = "the shared system prompt of every call in this test, long enough for several blocks ".repeat(8);
    for (int i = 0; i < 3; i++) {
      assertEquals(200, post("{\"model\": \"affinity-sim\", \"prompt\": \"" + prompt + i + "\", \"max_tokens\": 3}"));
    }
    assertEquals(200, post("{\"model\": \"affinity-sim\", \"prompt\": \"" + prompt + "s\", \"max_tokens\": 4,"
        + " \"stream\": true}"));
    assertEquals(400, post("{\"model\": \"affinity-sim\", \"prompt\": \"x\", \"max_tokens\": -1}"));
    assertEquals(404, post("{\"model\": \"no-such-model\", \"prompt\": \"x\", \"max_tokens\": 1}"));
    scrape = PrometheusText.parse(http.send(HttpRequest.newBuilder(URI.create(base + "/prometheus/metrics")).build(),
        HttpResponse.BodyHandlers.ofString()).body());
  }

  @AfterAll
  static void stop() {
    server.close();
  }

  static int post(String body) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create(base + "/v1/completions")).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString()).statusCode();
  }

  @Test
  void theServerCountersCountAsUpstreamDoes() {
    assertEquals(4, scrape.value("total_requests_total"), "requests that reached the orchestration");
    assertEquals(1, scrape.value("stream_requests_total"));
    assertEquals(3, scrape.value("nonstream_requests_total"));
    assertEquals(4, scrape.value("total_responses_total"));
    assertEquals(1, scrape.value("validation_exceptions_total"), "max_tokens: -1");
    assertEquals(1, scrape.value("http_exceptions_total"), "the unknown model's 404");
    assertEquals(0, scrape.value("internal_errors_total"));
    assertEquals(4, scrape.value("queue_latency_seconds_count"));
    for (String counter : List.of("total_requests", "stream_requests", "nonstream_requests", "validation_exceptions",
        "http_exceptions", "internal_errors", "total_responses")) {
      assertEquals("counter", scrape.types().get(counter + "_total"), counter);
    }
    assertEquals("histogram", scrape.types().get("queue_latency_seconds"));
  }

  @Test
  void theRoleMetricsCountEveryLeg() {
    for (String role : List.of("ctx", "gen")) {
      assertEquals(4, scrape.value(role + "_total_requests_total"), role);
      assertEquals(4, scrape.value(role + "_completed_requests_total"), role);
      assertEquals(0, scrape.value(role + "_error_requests_total"), role);
      assertEquals(0, scrape.value(role + "_retry_requests_total"), role);
      assertEquals(4, scrape.value(role + "_complete_latency_seconds_count"), role);
    }
    // only the generation leg of the streamed request streams: its first chunk, then one gap per later chunk
    assertEquals(0, scrape.value("ctx_first_token_latency_seconds_count"));
    assertEquals(1, scrape.value("gen_first_token_latency_seconds_count"));
    assertTrue(scrape.value("gen_per_token_latency_seconds_count") >= 1,
        "chunks after the first: " + scrape.value("gen_per_token_latency_seconds_count"));
  }

  @Test
  void perfMetricsKeepsTheLatestRequestsAndHandsEachOutOnce() throws Exception {
    var json = new com.fasterxml.jackson.databind.ObjectMapper();
    com.fasterxml.jackson.databind.JsonNode records = json.readTree(http.send(
        HttpRequest.newBuilder(URI.create(base + "/perf_metrics")).build(), HttpResponse.BodyHandlers.ofString()).body());
    assertEquals(2, records.size(), "perf_metrics_max_requests: 2 of the 4 answered: " + records);
    for (var r : records) {
      assertTrue(r.get("ctx_server").asText().startsWith("ctx-"), r.toString());
      assertTrue(r.get("gen_server").asText().startsWith("gen-"), r.toString());
      double arrival = r.get("disagg_server_arrival_time").asDouble();
      double first = r.get("disagg_server_first_token_time").asDouble();
      assertTrue(first >= arrival, r.toString());
      assertEquals(r.get("ctx_request_id").asLong(), r.get("ctx_perf_metrics").get("ctx_request_id").asLong());
      var kv = r.get("ctx_perf_metrics").get("perf_metrics").get("kv_cache_metrics");
      assertTrue(kv.get("num_reused_blocks").asLong() > 0, "the shared prefix, reused: " + r);
      assertEquals(kv.get("num_total_allocated_blocks").asLong(),
          kv.get("num_reused_blocks").asLong() + kv.get("num_new_allocated_blocks").asLong());
    }
    assertEquals(0, json.readTree(http.send(HttpRequest.newBuilder(URI.create(base + "/perf_metrics")).build(),
        HttpResponse.BodyHandlers.ofString()).body()).size(), "each record is handed out once");
  }

  @Test
  void everySeriesTheDashboardQueriesIsOnALiveScrape() throws Exception {
    var dashboard = new com.fasterxml.jackson.databind.ObjectMapper().readTree(
        java.nio.file.Path.of("../../deploy/grafana/affinity-dashboard.json").toFile());
    java.util.Set<String> queried = DashboardQueries.metricNames(dashboard);
    assertTrue(queried.size() >= 25, "the dashboard's series: " + queried);
    java.util.Set<String> missing = new java.util.TreeSet<>(queried);
    missing.removeAll(scrape.names());
    // affinity_shared_kv_*: registered only with affinity.shared_state and remote workers; here from SharedKvMeters
    // over a real SharedKvEvents on a real nats-server, rendered by the frontend's kind of registry
    java.util.Set<String> shared;
    try (var nats = dev.affinity.server.shared.NatsProcess.start();
        var events = dev.affinity.server.shared.SharedKvEvents.start(
            dev.affinity.config.SharedStateSettings.of(nats.url()), "dashboard", java.util.Optional.empty())) {
      var registry = new io.micrometer.prometheusmetrics.PrometheusMeterRegistry(
          io.micrometer.prometheusmetrics.PrometheusConfig.DEFAULT);
      SharedKvMeters.register(registry, events);
      shared = PrometheusText.parse(registry.scrape()).names();
    }
    assertTrue(shared.stream().allMatch(n -> n.startsWith("affinity_shared_kv_")), shared.toString());
    assertTrue(queried.containsAll(shared), "a panel for every shared-state series: " + shared + " queried " + queried);
    missing.removeAll(shared);
    // affinity_prompt_prefix_*: registered only with a model tokenizer (affinity.tokenizer); here from
    // PromptPrefixMeters over a real PromptPrefixes, rendered by the frontend's kind of registry
    var prefixRegistry = new io.micrometer.prometheusmetrics.PrometheusMeterRegistry(
        io.micrometer.prometheusmetrics.PrometheusConfig.DEFAULT);
    PromptPrefixMeters.register(prefixRegistry, new dev.affinity.tokenizer.PromptPrefixes(1 << 20));
    java.util.Set<String> prefixes = PrometheusText.parse(prefixRegistry.scrape()).names();
    assertTrue(prefixes.stream().allMatch(n -> n.startsWith("affinity_prompt_prefix_")), prefixes.toString());
    assertTrue(queried.containsAll(prefixes), "a panel for every kept-prompt series: " + prefixes + " queried " + queried);
    missing.removeAll(prefixes);
    assertEquals(java.util.Set.of(), missing, "queried by a panel, absent from /metrics");
    for (String series : List.of("affinity_kv_event_gaps_cleared_total", "affinity_kv_event_restarts_total")) {
      assertTrue(queried.contains(series), "the dashboard should show " + series);
    }
    for (var panel : dashboard.get("panels")) {
      assertTrue(panel.get("targets").size() > 0, panel.get("title").asText());
    }
  }

  @Test
  void theQueryReaderFindsTheMetricsAndNothingElse() {
    assertEquals(java.util.Set.of("a_bucket"),
        DashboardQueries.metricNames("histogram_quantile(0.9, sum by (le, fleet) (rate(a_bucket{job=~\"$job\"}[5m])))"));
    assertEquals(java.util.Set.of("x_total", "y_total"),
        DashboardQueries.metricNames("sum(rate(x_total[$__rate_interval])) / sum without (rank) (y_total)"));
  }

  @Test
  void theHistogramsHaveUpstreamsBuckets() {
    List<Double> shortBuckets = Arrays.stream(Buckets.SHORT).boxed().toList();
    List<Double> longBuckets = Arrays.stream(Buckets.LONG).boxed().toList();
    assertEquals(22, shortBuckets.size());
    assertEquals(21, longBuckets.size());
    assertEquals(shortBuckets, scrape.buckets("queue_latency_seconds"));
    for (String role : List.of("ctx", "gen")) {
      assertEquals(shortBuckets, scrape.buckets(role + "_first_token_latency_seconds"));
      assertEquals(shortBuckets, scrape.buckets(role + "_per_token_latency_seconds"));
      assertEquals(longBuckets, scrape.buckets(role + "_complete_latency_seconds"));
    }
  }

  @Test
  void affinitysOwnSeriesArePresentAndCumulativeCountsAreCounters() {
    // the same prefix three times: the second and third context legs are predicted and served from the cache
    double prompt = scrape.value("affinity_kv_prompt_tokens_total{fleet=\"context\"}");
    double cached = scrape.value("affinity_kv_cached_tokens_total{fleet=\"context\"}");
    double predicted = scrape.value("affinity_kv_predicted_cached_tokens_total{fleet=\"context\"}");
    assertTrue(prompt > 0 && cached > 0 && predicted > 0, prompt + " " + cached + " " + predicted);
    assertTrue(cached <= prompt && predicted <= prompt);
    assertEquals(4, scrape.value("affinity_router_decision_seconds_count{fleet=\"context\"}"));
    assertTrue(scrape.value("affinity_tokenize_seconds_count{request=\"completion\"}") >= 4);
    assertEquals(0, scrape.value("affinity_stream_resumes_total"));
    assertTrue(scrape.value("affinity_kv_events_applied_total{fleet=\"context\"}") > 0, "the cache's events");
    assertEquals(0, scrape.value("affinity_kv_events_dropped_total{fleet=\"context\"}"));
    // per (worker, rank): nothing in flight once every request is answered, one row per rank of every worker
    assertEquals(0, scrape.value("affinity_router_rank_requests{fleet=\"context\",rank=\"0\",worker=\"ctx-0\"}"));
    assertEquals(0, scrape.value("affinity_router_rank_tokens{fleet=\"generation\",rank=\"1\",worker=\"gen-0\"}"));
    for (var e : scrape.types().entrySet()) {
      if (e.getKey().endsWith("_total")) {
        assertEquals("counter", e.getValue(), e.getKey());
      }
    }
    for (String counter : List.of("affinity_router_decisions_total", "affinity_router_expired_selections_total",
        "affinity_kv_events_applied_total", "affinity_kv_event_batches_total", "affinity_kv_events_dropped_total",
        "affinity_kv_event_apply_seconds_total", "affinity_worker_rejected_poll_items_total")) {
      assertEquals("counter", scrape.types().get(counter), counter + " in " + scrape.types());
    }
  }
}
