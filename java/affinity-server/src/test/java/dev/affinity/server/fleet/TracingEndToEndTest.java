package dev.affinity.server.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.server.tracing.OtlpSettings;
import dev.affinity.server.tracing.Tracing;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The span tree of requests over the embedded default (in-process CPU-executor workers), exported to memory:
 * {@code disaggregated_request} with its routing, context leg and generation leg spans and their attributes.
 */
class TracingEndToEndTest {
  static final String TRACE_ID = "0af7651916cd43dd8448eb211c80319c";
  static final String CLIENT_SPAN = "b7ad6b7169203331";
  static final InMemorySpanExporter exporter = InMemorySpanExporter.create();
  static AffinityServer server;
  static HttpClient http;

  @BeforeAll
  static void start() throws Exception {
    String yaml;
    try (InputStream in = TracingEndToEndTest.class.getResourceAsStream("/dev/affinity/server/sim-workers.yaml")) {
      yaml = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    // the shipped default, 100x faster than modelled time (as ServeEndToEndTest)
    yaml = yaml.replace("      preset: llama3-70b-h100-tp8\n      kv_blocks_per_rank: 8192",
            "      preset: llama3-70b-h100-tp8\n      time_scale: 0.01\n      kv_blocks_per_rank: 8192")
        .replace("    generation:\n      instances: 1\n      ranks: 2\n      preset: llama3-70b-h100-tp8",
            "    generation:\n      instances: 1\n      ranks: 2\n      preset: llama3-70b-h100-tp8\n      time_scale: 0.01");
    DisaggConfig cfg = ConfigLoader.parse(yaml, "default").config();
    server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, AffinityServer.VERSION).withPort(0)
        .withAccessLog(AccessLog.none()), Tracing.exporting(exporter, "affinity", OtlpSettings.Batch.DEFAULT));
    http = HttpClient.newHttpClient();
  }

  @AfterAll
  static void stop() {
    server.close();
  }

  /** Forgets the spans of earlier requests (exported first, so none arrives later). */
  @BeforeEach
  void clear() {
    assertTrue(server.tracing().flush(Duration.ofSeconds(10)), "flushed");
    exporter.reset();
  }

  static void post(String body, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/v1/chat/completions"))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
  }

  static List<SpanData> spans() {
    assertTrue(server.tracing().flush(Duration.ofSeconds(10)), "flushed");
    return exporter.getFinishedSpanItems();
  }

  static SpanData one(List<SpanData> spans, String name) {
    List<SpanData> named = spans.stream().filter(s -> s.getName().equals(name)).toList();
    assertEquals(1, named.size(), name + " in " + spans);
    return named.get(0);
  }

  static String str(SpanData s, String key) {
    return s.getAttributes().get(AttributeKey.stringKey(key));
  }

  static Long num(SpanData s, String key) {
    return s.getAttributes().get(AttributeKey.longKey(key));
  }

  @Test
  void aSubAgentRequestIsOneRequestSpanWithRoutingAndBothLegs() throws Exception {
    String sys = "You are a careful coding agent with tools. ".repeat(30);
    String body = "{\"model\": \"affinity-sim\", \"messages\": [{\"role\": \"system\", \"content\": \"" + sys + "\"},"
        + "{\"role\": \"user\", \"content\": \"%s\"}], \"max_tokens\": 3}";
    post(body.formatted("plan"), "X-Session-ID", "parent-trace");
    clear();
    post(body.formatted("task"), "X-Session-ID", "child-trace", "X-Dynamo-Parent-Session-ID", "parent-trace",
        "traceparent", "00-" + TRACE_ID + "-" + CLIENT_SPAN + "-01");

    List<SpanData> spans = spans();
    SpanData root = one(spans, "disaggregated_request");
    assertEquals(SpanKind.SERVER, root.getKind());
    assertEquals(TRACE_ID, root.getTraceId(), "the client's trace");
    assertEquals(CLIENT_SPAN, root.getParentSpanId(), "the client's span is the parent");
    assertEquals(StatusCode.OK, root.getStatus().getStatusCode());
    assertEquals("child-trace", str(root, "affinity.conversation_id"));
    assertEquals("parent-trace", str(root, "affinity.affinity_id"));
    assertEquals(0L, num(root, "affinity.retries"));
    assertEquals(200L, num(root, "http.response.status_code"));
    assertTrue(str(root, "affinity.ctx.worker").startsWith("ctx-"), root.getAttributes().toString());
    assertEquals("gen-0", str(root, "affinity.gen.worker"));
    assertNotNull(num(root, "affinity.ctx.rank"));
    assertNotNull(num(root, "affinity.gen.rank"));
    assertTrue(num(root, "affinity.ctx.reused_tokens") > 0, "the parent's prefix was reused: " + root.getAttributes());
    assertTrue(root.getEvents().stream().anyMatch(e -> e.getName().equals("ctx_server.selected")));
    assertTrue(root.getEvents().stream().anyMatch(e -> e.getName().equals("gen_server.selected")));

    List<SpanData> routing = spans.stream().filter(s -> s.getName().equals("routing")).toList();
    assertEquals(List.of("context", "generation"), routing.stream().map(s -> str(s, "affinity.fleet")).sorted().toList());
    SpanData ctxRouting = routing.stream().filter(s -> "context".equals(str(s, "affinity.fleet"))).findFirst().orElseThrow();
    assertEquals(str(root, "affinity.ctx.worker"), str(ctxRouting, "affinity.worker"));

    SpanData ctx = one(spans, "context_leg");
    SpanData gen = one(spans, "generation_leg");
    assertEquals(SpanKind.CLIENT, ctx.getKind());
    assertEquals(str(root, "affinity.ctx.worker"), str(ctx, "affinity.worker"));
    assertEquals(num(root, "affinity.ctx.reused_tokens"), num(ctx, "affinity.reused_tokens"));
    assertEquals(num(root, "affinity.ctx.rank"), num(ctx, "affinity.served_rank"));
    assertEquals("gen-0", str(gen, "affinity.worker"));
    assertEquals(num(ctx, "affinity.attempt"), num(gen, "affinity.attempt"), "one attempt");
    for (SpanData child : List.of(ctxRouting, ctx, gen)) {
      assertEquals(root.getTraceId(), child.getTraceId(), child.getName());
      assertEquals(root.getSpanId(), child.getParentSpanId(), child.getName());
    }
    assertFalse(ctx.getStartEpochNanos() < ctxRouting.getStartEpochNanos(), "routed, then sent");
  }

  @Test
  void withoutATraceparentTheRequestSpanStartsATrace() throws Exception {
    post("{\"model\": \"affinity-sim\", \"messages\": [{\"role\": \"user\", \"content\": \"Hello\"}], \"max_tokens\": 2,"
        + " \"stream\": true}");
    List<SpanData> spans = spans();
    SpanData root = one(spans, "disaggregated_request");
    assertFalse(root.getParentSpanContext().isValid(), "a root span");
    assertTrue(root.getAttributes().get(AttributeKey.booleanKey("affinity.stream")));
    assertTrue(root.getEvents().stream().anyMatch(e -> e.getName().equals("stream_start")));
    assertEquals(5, spans.size(), "the request, two routings, two legs: " + spans);
  }
}
