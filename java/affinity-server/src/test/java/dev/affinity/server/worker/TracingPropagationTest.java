package dev.affinity.server.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.server.tracing.OtlpSettings;
import dev.affinity.server.tracing.Tracing;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The W3C trace context on the HTTP legs (docs/tracing.md): with tracing off the client's {@code traceparent} goes
 * on unchanged and none is invented; with tracing on each leg carries its own leg span's context in the client's
 * trace; a retry shows in the spans.
 */
class TracingPropagationTest {
  static final String TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
  static final String CLIENT_SPAN = "00f067aa0ba902b7";
  static final String TRACEPARENT = "00-" + TRACE_ID + "-" + CLIENT_SPAN + "-01";
  static final String COMPLETIONS = "/v1/completions";

  static DisaggConfig config(List<FakeTrtllmServe> ctx, FakeTrtllmServe gen, String extra) {
    String ctxUrls = String.join(", ", ctx.stream().map(f -> "\"127.0.0.1:" + f.port() + "\"").toList());
    String yaml = """
        hostname: 127.0.0.1
        port: 8000
        conversation_affinity_header_for_subagents: X-Dynamo-Parent-Session-ID
        context_servers:
          num_instances: %d
          urls: [%s]
          router: {type: load_balancing}
        generation_servers:
          num_instances: 1
          urls: ["127.0.0.1:%d"]
          router: {type: load_balancing}
        affinity: {model: m}
        """.formatted(ctx.size(), ctxUrls, gen.port()) + extra;
    return ConfigLoader.parse(yaml, "tracing.yaml").config();
  }

  static FrontendOptions options(DisaggConfig cfg) throws java.io.IOException {
    return FrontendOptions.fromConfig(cfg, "t").withPort(0).withAccessLog(AccessLog.none());
  }

  static HttpResponse<String> post(AffinityServer server, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + COMPLETIONS))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"model\": \"m\", \"prompt\": \"hi\", \"max_tokens\": 3}"));
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    HttpResponse<String> r = HttpClient.newHttpClient().send(b.build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    return r;
  }

  static Tracing inMemory(InMemorySpanExporter exporter) {
    return Tracing.exporting(exporter, "affinity-test", OtlpSettings.Batch.DEFAULT);
  }

  static List<SpanData> spans(AffinityServer server, InMemorySpanExporter exporter) {
    assertTrue(server.tracing().flush(Duration.ofSeconds(10)), "spans flushed");
    return exporter.getFinishedSpanItems();
  }

  static SpanData one(List<SpanData> spans, String name) {
    List<SpanData> named = spans.stream().filter(s -> s.getName().equals(name)).toList();
    assertEquals(1, named.size(), name + " in " + spans);
    return named.get(0);
  }

  @Test
  void tracingOffHandsTheClientsTraceContextOnUnchangedOnBothLegs() throws Exception {
    try (FakeTrtllmServe ctx = FakeTrtllmServe.start(); FakeTrtllmServe gen = FakeTrtllmServe.start()) {
      DisaggConfig cfg = config(List.of(ctx), gen, "");
      try (AffinityServer server = AffinityServer.start(cfg, options(cfg))) {
        assertFalse(server.tracing().enabled(), "no otlp_config, no OTEL_EXPORTER_OTLP_*: off");
        post(server, "traceparent", TRACEPARENT, "tracestate", "vendor=abc");
        for (FakeTrtllmServe f : List.of(ctx, gen)) {
          FakeTrtllmServe.Received leg = f.last(COMPLETIONS);
          assertEquals(TRACEPARENT, leg.header("traceparent"));
          assertEquals("vendor=abc", leg.header("tracestate"));
        }
      }
    }
  }

  @Test
  void noTraceContextIsInventedWhenTheClientSentNoneAndTracingIsOff() throws Exception {
    try (FakeTrtllmServe ctx = FakeTrtllmServe.start(); FakeTrtllmServe gen = FakeTrtllmServe.start()) {
      DisaggConfig cfg = config(List.of(ctx), gen, "");
      try (AffinityServer server = AffinityServer.start(cfg, options(cfg))) {
        post(server);
        post(server, "traceparent", "00-not-a-trace-context-01"); // malformed: ignored, as the specification asks
        for (FakeTrtllmServe f : List.of(ctx, gen)) {
          for (FakeTrtllmServe.Received leg : f.received(COMPLETIONS)) {
            assertNull(leg.header("traceparent"), leg.headers().toString());
            assertNull(leg.header("tracestate"), leg.headers().toString());
          }
        }
      }
    }
  }

  @Test
  void eachLegCarriesItsLegSpanInTheClientsTrace() throws Exception {
    InMemorySpanExporter exporter = InMemorySpanExporter.create();
    try (FakeTrtllmServe ctx = FakeTrtllmServe.start(); FakeTrtllmServe gen = FakeTrtllmServe.start()) {
      DisaggConfig cfg = config(List.of(ctx), gen, "");
      try (AffinityServer server = AffinityServer.start(cfg, options(cfg), inMemory(exporter))) {
        post(server, "traceparent", TRACEPARENT, "tracestate", "vendor=abc", "X-Session-ID", "conv-7");
        List<SpanData> spans = spans(server, exporter);
        SpanData root = one(spans, "disaggregated_request");
        assertEquals(TRACE_ID, root.getTraceId());
        assertEquals(CLIENT_SPAN, root.getParentSpanId(), "the client's span is the parent");
        assertEquals(SpanKind.SERVER, root.getKind());
        assertEquals("conv-7", root.getAttributes().get(AttributeKey.stringKey("affinity.conversation_id")));

        SpanData ctxLeg = one(spans, "context_leg");
        SpanData genLeg = one(spans, "generation_leg");
        String ctxHeader = ctx.last(COMPLETIONS).header("traceparent");
        String genHeader = gen.last(COMPLETIONS).header("traceparent");
        assertNotNull(ctxHeader);
        assertNotNull(genHeader);
        assertEquals("00-" + TRACE_ID + "-" + ctxLeg.getSpanId() + "-01", ctxHeader);
        assertEquals("00-" + TRACE_ID + "-" + genLeg.getSpanId() + "-01", genHeader);
        assertEquals("vendor=abc", ctx.last(COMPLETIONS).header("tracestate"));
        assertEquals("vendor=abc", gen.last(COMPLETIONS).header("tracestate"));
        assertEquals(FakeTrtllmServe.CTX_DP_RANK,
            ctxLeg.getAttributes().get(AttributeKey.longKey("affinity.served_rank")).intValue());
      }
    }
  }

  @Test
  void aRetryShowsAsAFailedLegAndTheRequestsRetryCount() throws Exception {
    InMemorySpanExporter exporter = InMemorySpanExporter.create();
    try (FakeTrtllmServe a = FakeTrtllmServe.start(); FakeTrtllmServe b = FakeTrtllmServe.start();
        FakeTrtllmServe gen = FakeTrtllmServe.start()) {
      DisaggConfig cfg = config(List.of(a, b), gen, "max_retries: 1\n");
      try (AffinityServer server = AffinityServer.start(cfg, options(cfg), inMemory(exporter))) {
        a.enqueue(FakeTrtllmServe.Behavior.status(500, "{\"error\": {\"message\": \"boom\"}}"));
        // the router chooses between two idle workers: send until worker a has had its (failing) request
        for (int i = 0; i < 8 && a.received(COMPLETIONS).isEmpty(); i++) {
          post(server);
        }
        assertEquals(1, a.received(COMPLETIONS).size(), "worker a was tried");
        List<SpanData> spans = spans(server, exporter);
        SpanData failed = spans.stream().filter(s -> s.getName().equals("context_leg")
            && s.getStatus().getStatusCode() == StatusCode.ERROR).findFirst().orElseThrow(() -> new AssertionError(spans.toString()));
        assertEquals(500L, failed.getAttributes().get(AttributeKey.longKey("http.response.status_code")));
        List<SpanData> trace = spans.stream().filter(s -> s.getTraceId().equals(failed.getTraceId())).toList();
        SpanData root = one(trace, "disaggregated_request");
        assertEquals(1L, root.getAttributes().get(AttributeKey.longKey("affinity.retries")));
        assertEquals(StatusCode.OK, root.getStatus().getStatusCode());
        assertTrue(root.getEvents().stream().anyMatch(e -> e.getName().equals("retry")), root.getEvents().toString());
        assertEquals(2, trace.stream().filter(s -> s.getName().equals("context_leg")).count(), "one per attempt");
        SpanData retried = trace.stream().filter(s -> s.getName().equals("context_leg")
            && s.getStatus().getStatusCode() == StatusCode.OK).findFirst().orElseThrow();
        assertNotNull(retried.getAttributes().get(AttributeKey.stringKey("affinity.worker")));
        assertFalse(retried.getAttributes().get(AttributeKey.stringKey("affinity.worker"))
            .equals(failed.getAttributes().get(AttributeKey.stringKey("affinity.worker"))), "the retry went elsewhere");
        assertEquals(1, trace.stream().filter(s -> s.getName().equals("generation_leg")).count());
        trace.stream().filter(s -> !s.getName().equals("disaggregated_request"))
            .forEach(s -> assertEquals(root.getSpanId(), s.getParentSpanId(), s.getName()));
      }
    }
  }
}
