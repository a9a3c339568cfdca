package dev.affinity.server.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import dev.affinity.config.DisaggConfig;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.tracing.Tracing;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.trace.v1.ResourceSpans;
import io.opentelemetry.proto.trace.v1.ScopeSpans;
import io.opentelemetry.proto.trace.v1.Span;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The OTLP/HTTP export end to end: {@code otlp_config} (or the {@code OTEL_EXPORTER_OTLP_*} variables) pointing at
 * a receiver in this test, which decodes what the frontend POSTs with the OTLP protobuf classes.
 */
class TracingOtlpExportTest {
  /** One POST as received. */
  record Export(String path, String contentType, Map<String, List<String>> headers, ExportTraceServiceRequest request) {}

  private HttpServer receiver;
  private final List<Export> exports = new CopyOnWriteArrayList<>();

  @BeforeEach
  void startReceiver() throws IOException {
    receiver = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    receiver.createContext("/", ex -> {
      try (InputStream in = ex.getRequestBody()) {
        exports.add(new Export(ex.getRequestURI().getPath(), ex.getRequestHeaders().getFirst("Content-Type"),
            Map.copyOf(ex.getRequestHeaders()), ExportTraceServiceRequest.parseFrom(in.readAllBytes())));
      }
      byte[] ok = ExportTraceServiceResponse.getDefaultInstance().toByteArray();
      ex.getResponseHeaders().set("Content-Type", "application/x-protobuf");
      ex.sendResponseHeaders(200, ok.length == 0 ? -1 : ok.length);
      ex.getResponseBody().write(ok);
      ex.close();
    });
    receiver.start();
  }

  @AfterEach
  void stopReceiver() {
    receiver.stop(0);
  }

  private String receiverUrl() {
    return "http://127.0.0.1:" + receiver.getAddress().getPort();
  }

  private List<Span> spans() {
    List<Span> out = new ArrayList<>();
    for (Export e : exports) {
      for (ResourceSpans rs : e.request().getResourceSpansList()) {
        for (ScopeSpans ss : rs.getScopeSpansList()) {
          out.addAll(ss.getSpansList());
        }
      }
    }
    return out;
  }

  private static String attr(Span span, String key) {
    return span.getAttributesList().stream().filter(kv -> kv.getKey().equals(key)).map(KeyValue::getValue)
        .map(v -> v.hasStringValue() ? v.getStringValue() : String.valueOf(v.getIntValue())).findFirst().orElse(null);
  }

  @Test
  void otlpConfigExportsTheRequestsSpansOverOtlpHttp() throws Exception {
    try (FakeTrtllmServe ctx = FakeTrtllmServe.start(); FakeTrtllmServe gen = FakeTrtllmServe.start()) {
      DisaggConfig cfg = TracingPropagationTest.config(List.of(ctx), gen,
          "otlp_config:\n  otlp_traces_endpoint: " + receiverUrl() + "/v1/traces\n");
      try (AffinityServer server = AffinityServer.start(cfg, TracingPropagationTest.options(cfg))) {
        assertTrue(server.tracing().enabled(), "otlp_config turns exporting on");
        TracingPropagationTest.post(server, "traceparent", TracingPropagationTest.TRACEPARENT, "X-Session-ID", "conv-otlp");
        assertTrue(server.tracing().flush(Duration.ofSeconds(10)), "exported");
      }
      assertTrue(!exports.isEmpty(), "the receiver got a batch");
      Export first = exports.get(0);
      assertEquals("/v1/traces", first.path());
      assertEquals("application/x-protobuf", first.contentType());
      assertEquals("affinity", first.request().getResourceSpans(0).getResource().getAttributesList().stream()
          .filter(kv -> kv.getKey().equals("service.name")).findFirst().orElseThrow().getValue().getStringValue());
      List<Span> spans = spans();
      List<String> names = spans.stream().map(Span::getName).sorted().toList();
      assertEquals(List.of("context_leg", "disaggregated_request", "generation_leg", "routing", "routing"), names);
      Span root = spans.stream().filter(s -> s.getName().equals("disaggregated_request")).findFirst().orElseThrow();
      assertEquals(TracingPropagationTest.TRACE_ID, HexFormat.of().formatHex(root.getTraceId().toByteArray()));
      assertEquals(TracingPropagationTest.CLIENT_SPAN, HexFormat.of().formatHex(root.getParentSpanId().toByteArray()));
      assertEquals(Span.SpanKind.SPAN_KIND_SERVER, root.getKind());
      assertEquals("conv-otlp", attr(root, "affinity.conversation_id"));
      assertEquals("200", attr(root, "http.response.status_code"));
    }
  }

  @Test
  void theStandardVariablesConfigureTheExporter() throws Exception {
    try (FakeTrtllmServe ctx = FakeTrtllmServe.start(); FakeTrtllmServe gen = FakeTrtllmServe.start()) {
      DisaggConfig cfg = TracingPropagationTest.config(List.of(ctx), gen, "");
      Map<String, String> env = Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", receiverUrl(),
          "OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=s%20ecret,x-tenant=t1", "OTEL_SERVICE_NAME", "frontend-7");
      try (AffinityServer server = AffinityServer.start(cfg, TracingPropagationTest.options(cfg),
          Tracing.fromConfig(cfg, env))) {
        TracingPropagationTest.post(server);
        assertTrue(server.tracing().flush(Duration.ofSeconds(10)), "exported");
      }
      assertTrue(!exports.isEmpty(), "the receiver got a batch");
      Export first = exports.get(0);
      assertEquals("/v1/traces", first.path(), "the generic endpoint is a base");
      assertEquals(List.of("s ecret"), first.headers().get("X-api-key"));
      assertEquals(List.of("t1"), first.headers().get("X-tenant"));
      assertEquals("frontend-7", first.request().getResourceSpans(0).getResource().getAttributesList().stream()
          .filter(kv -> kv.getKey().equals("service.name")).findFirst().orElseThrow().getValue().getStringValue());
      assertTrue(spans().stream().anyMatch(s -> s.getName().equals("disaggregated_request")));
    }
  }
}
