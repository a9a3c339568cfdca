package dev.affinity.server.tracing;

import dev.affinity.config.DisaggConfig;
import dev.affinity.tracing.RequestTracer;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.exporter.otlp.http.trace.OtlpHttpSpanExporter;
import io.opentelemetry.exporter.otlp.http.trace.OtlpHttpSpanExporterBuilder;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.export.BatchSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The frontend's OpenTelemetry tracing, as upstream's {@code otlp_config} (TensorRT-LLM
 * {@code tensorrt_llm/llmapi/tracing.py}, {@code tensorrt_llm/serve/openai_disagg_server.py}): a tracer provider
 * whose spans go through a batch span processor (bounded queue; a span that finds it full is dropped, so exporting
 * never blocks a request) to an OTLP/HTTP exporter. Off unless configured ({@link #off()}: no provider, no spans, the
 * client's own trace context still handed on to the workers). Closing flushes what is queued (bounded) and shuts
 * the exporter down; the server closes it last.
 */
public final class Tracing implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Tracing.class);
  private static final Duration CLOSE_LIMIT = Duration.ofSeconds(5);

  private final SdkTracerProvider provider; // null: off
  private final RequestTracer tracer;
  private final AtomicBoolean closed = new AtomicBoolean();

  private Tracing(SdkTracerProvider provider) {
    this.provider = provider;
    this.tracer = provider == null ? RequestTracer.NONE : new OtelRequestTracer(provider.get(OtelRequestTracer.SCOPE));
  }

  /** Tracing off. */
  public static Tracing off() {
    return new Tracing(null);
  }

  /**
   * From the configuration's {@code otlp_config} and the {@code OTEL_*} variables of {@code env} (see
   * {@link OtlpSettings#resolve}); off when neither asks for exporting.
   *
   * @throws IllegalArgumentException for a value that cannot be used
   */
  /** {@link #fromConfig} with the process's environment; as upstream, a set-up that fails is logged and is off. */
  public static Tracing fromConfigOrOff(DisaggConfig config) {
    try {
      return fromConfig(config, System.getenv());
    } catch (IllegalArgumentException e) {
      org.slf4j.LoggerFactory.getLogger(Tracing.class).error("tracing is off: {}", e.getMessage());
      return off();
    }
  }

  public static Tracing fromConfig(DisaggConfig config, Map<String, String> env) {
    Optional<OtlpSettings> settings = OtlpSettings.resolve(config.otlpTracesEndpoint(), env);
    if (settings.isEmpty()) {
      return off();
    }
    OtlpSettings s = settings.get();
    log.info("tracing: spans are exported over OTLP/HTTP to {}", s.endpoint());
    return exporting(otlpExporter(s), s.serviceName(), s.batch());
  }

  /** Spans go to {@code exporter} through a batch span processor (tests: an in-memory exporter). */
  public static Tracing exporting(SpanExporter exporter, String serviceName, OtlpSettings.Batch batch) {
    Objects.requireNonNull(exporter, "exporter");
    BatchSpanProcessor processor = BatchSpanProcessor.builder(exporter)
        .setScheduleDelay(batch.scheduleDelay())
        .setMaxQueueSize(batch.maxQueueSize())
        .setMaxExportBatchSize(batch.maxExportBatchSize())
        .setExporterTimeout(batch.exportTimeout())
        .build();
    Resource resource = Resource.getDefault().merge(Resource.create(
        Attributes.of(AttributeKey.stringKey("service.name"), serviceName)));
    return new Tracing(SdkTracerProvider.builder().setResource(resource).addSpanProcessor(processor).build());
  }

  static SpanExporter otlpExporter(OtlpSettings s) {
    OtlpHttpSpanExporterBuilder b = OtlpHttpSpanExporter.builder()
        .setEndpoint(s.endpoint().toString())
        .setTimeout(s.timeout())
        .setCompression(s.compression());
    s.headers().forEach(b::addHeader);
    return b.build();
  }

  public boolean enabled() {
    return provider != null;
  }

  /** What the orchestration traces requests with. */
  public RequestTracer tracer() {
    return tracer;
  }

  /** Exports what is queued now; true when done within {@code limit} (tests, shutdown). */
  public boolean flush(Duration limit) {
    if (provider == null) {
      return true;
    }
    CompletableResultCode r = provider.forceFlush().join(limit.toMillis(), TimeUnit.MILLISECONDS);
    return r.isDone() && r.isSuccess();
  }

  @Override
  public void close() {
    if (provider == null || !closed.compareAndSet(false, true)) {
      return;
    }
    CompletableResultCode r = provider.shutdown().join(CLOSE_LIMIT.toMillis(), TimeUnit.MILLISECONDS);
    if (!r.isDone()) {
      log.warn("tracing: the last spans were not exported within {} s", CLOSE_LIMIT.toSeconds());
    }
  }
}
