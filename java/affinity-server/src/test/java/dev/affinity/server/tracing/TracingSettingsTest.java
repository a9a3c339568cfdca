package dev.affinity.server.tracing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.conversation.HeaderSource;
import dev.affinity.conversation.Resolution;
import dev.affinity.frontend.AdmittedRequest;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.tracing.RequestTrace;
import dev.affinity.tracing.RequestTracer;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Where spans go ({@code otlp_config}, {@code OTEL_*}) and that exporting never holds a request up. */
class TracingSettingsTest {

  @Test
  void offUnlessConfigured() {
    assertTrue(OtlpSettings.resolve(Optional.empty(), Map.of()).isEmpty());
    assertTrue(OtlpSettings.resolve(Optional.of(" "), Map.of()).isEmpty(), "a blank endpoint is none");
    assertTrue(OtlpSettings.resolve(Optional.of("http://c:4318/v1/traces"), Map.of("OTEL_SDK_DISABLED", "true")).isEmpty());
    assertTrue(OtlpSettings.resolve(Optional.empty(), Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318",
        "OTEL_TRACES_EXPORTER", "none")).isEmpty());
    assertFalse(Tracing.off().enabled());
    assertTrue(Tracing.off().tracer() == RequestTracer.NONE);
  }

  @Test
  void otlpConfigComesFirstThenTheTracesVariableThenTheGenericOne() {
    Map<String, String> env = Map.of("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:4318/custom/path",
        "OTEL_EXPORTER_OTLP_ENDPOINT", "http://g:4318/");
    assertEquals(URI.create("http://cfg:4318/v1/traces"),
        OtlpSettings.resolve(Optional.of("http://cfg:4318/v1/traces"), env).orElseThrow().endpoint());
    assertEquals(URI.create("http://cfg:4318/v1/traces"),
        OtlpSettings.resolve(Optional.of("http://cfg:4318"), env).orElseThrow().endpoint(), "no path: /v1/traces");
    assertEquals(URI.create("http://t:4318/custom/path"), OtlpSettings.resolve(Optional.empty(), env).orElseThrow().endpoint());
    assertEquals(URI.create("http://g:4318/v1/traces"),
        OtlpSettings.resolve(Optional.empty(), Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://g:4318/")).orElseThrow().endpoint());
  }

  @Test
  void theStandardVariablesSetHeadersTimeoutCompressionServiceAndBatch() {
    OtlpSettings s = OtlpSettings.resolve(Optional.of("https://c/v1/traces"), Map.of(
        "OTEL_EXPORTER_OTLP_HEADERS", "a=1,b=2",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "api-key=x%3Dy, tenant = t ",
        "OTEL_EXPORTER_OTLP_TIMEOUT", "2500",
        "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "gzip",
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf",
        "OTEL_SERVICE_NAME", "fe",
        "OTEL_BSP_MAX_QUEUE_SIZE", "100",
        "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "500",
        "OTEL_BSP_SCHEDULE_DELAY", "250")).orElseThrow();
    assertEquals(Map.of("api-key", "x=y", "tenant", "t"), s.headers(), "the traces variable wins");
    assertEquals(Duration.ofMillis(2500), s.timeout());
    assertEquals("gzip", s.compression());
    assertEquals("fe", s.serviceName());
    assertEquals(100, s.batch().maxQueueSize());
    assertEquals(100, s.batch().maxExportBatchSize(), "a batch never exceeds the queue");
    assertEquals(Duration.ofMillis(250), s.batch().scheduleDelay());
    OtlpSettings d = OtlpSettings.resolve(Optional.of("http://c:4318/v1/traces"), Map.of()).orElseThrow();
    assertEquals(Duration.ofSeconds(10), d.timeout());
    assertEquals("none", d.compression());
    assertEquals("affinity", d.serviceName());
    assertEquals(OtlpSettings.Batch.DEFAULT, d.batch());
  }

  @Test
  void unusableValuesAreNamed() {
    Optional<String> cfg = Optional.of("http://c:4318/v1/traces");
    assertEquals("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc: only http/protobuf is exported here (OTLP over HTTP, e.g. port 4318)",
        assertThrows(IllegalArgumentException.class,
            () -> OtlpSettings.resolve(cfg, Map.of("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"))).getMessage());
    assertTrue(assertThrows(IllegalArgumentException.class,
        () -> OtlpSettings.resolve(Optional.empty(), Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4317")))
        .getMessage().startsWith("OTEL_EXPORTER_OTLP_ENDPOINT: expected an http:// or https:// URL"));
    assertTrue(assertThrows(IllegalArgumentException.class,
        () -> OtlpSettings.resolve(cfg, Map.of("OTEL_EXPORTER_OTLP_TIMEOUT", "5s"))).getMessage()
        .startsWith("OTEL_EXPORTER_OTLP_TIMEOUT=5s"));
    assertTrue(assertThrows(IllegalArgumentException.class,
        () -> OtlpSettings.resolve(cfg, Map.of("OTEL_EXPORTER_OTLP_HEADERS", "novalue"))).getMessage()
        .startsWith("OTEL_EXPORTER_OTLP_HEADERS: expected key=value"));
    assertTrue(assertThrows(IllegalArgumentException.class,
        () -> OtlpSettings.resolve(cfg, Map.of("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd"))).getMessage()
        .startsWith("OTEL_EXPORTER_OTLP_COMPRESSION=zstd"));
    assertTrue(assertThrows(IllegalArgumentException.class,
        () -> OtlpSettings.resolve(cfg, Map.of("OTEL_BSP_MAX_QUEUE_SIZE", "0"))).getMessage()
        .startsWith("OTEL_BSP_MAX_QUEUE_SIZE=0"));
  }

  /** An exporter that holds every export until released, counting the spans it was given. */
  static final class StuckExporter implements SpanExporter {
    final CountDownLatch release = new CountDownLatch(1);
    final CountDownLatch exporting = new CountDownLatch(1);
    final AtomicInteger spans = new AtomicInteger();

    @Override
    public CompletableResultCode export(Collection<SpanData> batch) {
      spans.addAndGet(batch.size());
      exporting.countDown();
      CompletableResultCode r = new CompletableResultCode();
      Thread t = new Thread(() -> {
        try {
          release.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        r.succeed();
      }, "stuck-exporter");
      t.setDaemon(true);
      t.start();
      return r;
    }

    @Override
    public CompletableResultCode flush() {
      return CompletableResultCode.ofSuccess();
    }

    @Override
    public CompletableResultCode shutdown() {
      release.countDown();
      return CompletableResultCode.ofSuccess();
    }
  }

  @Test
  void aStuckCollectorNeverHoldsARequestUpSpansAreDroppedInstead() throws Exception {
    StuckExporter exporter = new StuckExporter();
    AdmittedRequest request = new AdmittedRequest(new ProtocolCodec().parseCompletionRequest(
        "{\"model\": \"m\", \"prompt\": \"x\"}".getBytes(StandardCharsets.UTF_8)), HeaderSource.NONE, Resolution.NONE, null);
    try (Tracing tracing = Tracing.exporting(exporter, "t", new OtlpSettings.Batch(Duration.ofMillis(1), 4, 1,
        Duration.ofSeconds(30)))) {
      RequestTracer tracer = tracing.tracer();
      RequestTrace first = tracer.start(request);
      first.ended(200, null, RouteInfo.of(1));
      assertTrue(exporter.exporting.await(10, java.util.concurrent.TimeUnit.SECONDS), "the first export is under way");
      for (int i = 0; i < 1000; i++) { // the queue holds 4: the rest is dropped, nothing waits
        tracer.start(request).ended(200, null, RouteInfo.of(i));
      }
      assertEquals(1, exporter.release.getCount(), "all ended while the collector was stuck");
      exporter.release.countDown();
      assertTrue(tracing.flush(Duration.ofSeconds(10)));
      assertTrue(exporter.spans.get() <= 1 + 4 + 1, "at most the queue's worth after the stuck batch: " + exporter.spans.get());
    }
  }
}
