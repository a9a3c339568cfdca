package dev.affinity.server.tracing;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * Where and how spans are exported (OTLP/HTTP, protobuf): {@code otlp_config.otlp_traces_endpoint} of the
 * configuration, else the standard {@code OTEL_EXPORTER_OTLP_*} environment variables. Nothing configured: no
 * exporting.
 *
 * @param endpoint the traces URL the batches are POSTed to (e.g. {@code http://collector:4318/v1/traces})
 * @param headers extra request headers ({@code OTEL_EXPORTER_OTLP_[TRACES_]HEADERS})
 * @param timeout one export's limit ({@code OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT}, milliseconds; default 10 s)
 * @param compression {@code gzip} or {@code none} ({@code OTEL_EXPORTER_OTLP_[TRACES_]COMPRESSION})
 * @param serviceName the resource's {@code service.name} ({@code OTEL_SERVICE_NAME}, default {@code affinity})
 * @param batch the batch span processor's limits ({@code OTEL_BSP_*})
 */
public record OtlpSettings(URI endpoint, Map<String, String> headers, Duration timeout, String compression,
    String serviceName, Batch batch) {
  public static final String DEFAULT_SERVICE_NAME = "affinity";
  /** The only protocol exported here; upstream's default is grpc (docs/tracing.md). */
  public static final String HTTP_PROTOBUF = "http/protobuf";

  /**
   * The batch span processor: spans wait in a queue of at most {@code maxQueueSize} (a span that finds it full is
   * dropped, never waited for) and go out in batches of up to {@code maxExportBatchSize} every {@code scheduleDelay}.
   */
  public record Batch(Duration scheduleDelay, int maxQueueSize, int maxExportBatchSize, Duration exportTimeout) {
    public static final Batch DEFAULT = new Batch(Duration.ofSeconds(5), 2048, 512, Duration.ofSeconds(30));

    public Batch {
      if (maxQueueSize < 1 || maxExportBatchSize < 1) {
        throw new IllegalArgumentException("queue and batch sizes must be positive");
      }
      maxExportBatchSize = Math.min(maxExportBatchSize, maxQueueSize);
    }
  }

  public OtlpSettings {
    headers = Map.copyOf(headers);
  }

  /**
   * The settings, or empty when exporting is off: no {@code otlp_config.otlp_traces_endpoint} and neither
   * {@code OTEL_EXPORTER_OTLP_TRACES_ENDPOINT} nor {@code OTEL_EXPORTER_OTLP_ENDPOINT}, or
   * {@code OTEL_SDK_DISABLED=true}, or {@code OTEL_TRACES_EXPORTER=none}.
   *
   * @throws IllegalArgumentException naming the variable or key of a value that cannot be used
   */
  public static Optional<OtlpSettings> resolve(Optional<String> configEndpoint, Map<String, String> env) {
    if ("true".equalsIgnoreCase(env(env, "OTEL_SDK_DISABLED")) || "none".equalsIgnoreCase(env(env, "OTEL_TRACES_EXPORTER"))) {
      return Optional.empty();
    }
    URI endpoint;
    if (configEndpoint.isPresent() && !configEndpoint.get().isBlank()) {
      endpoint = tracesUrl(configEndpoint.get().strip(), "otlp_config.otlp_traces_endpoint", false);
    } else if (env(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != null) {
      endpoint = tracesUrl(env(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", false);
    } else if (env(env, "OTEL_EXPORTER_OTLP_ENDPOINT") != null) {
      endpoint = tracesUrl(env(env, "OTEL_EXPORTER_OTLP_ENDPOINT"), "OTEL_EXPORTER_OTLP_ENDPOINT", true);
    } else {
      return Optional.empty();
    }
    String protocol = signal(env, "PROTOCOL");
    if (protocol != null && !protocol.equals(HTTP_PROTOBUF)) {
      throw new IllegalArgumentException(signalName(env, "PROTOCOL") + "=" + protocol + ": only " + HTTP_PROTOBUF
          + " is exported here (OTLP over HTTP, e.g. port 4318)");
    }
    Map<String, String> headers = headers(signal(env, "HEADERS"), signalName(env, "HEADERS"));
    Duration timeout = millis(signal(env, "TIMEOUT"), signalName(env, "TIMEOUT"), Duration.ofSeconds(10));
    String compression = Optional.ofNullable(signal(env, "COMPRESSION")).map(c -> c.toLowerCase(Locale.ROOT)).orElse("none");
    if (!compression.equals("gzip") && !compression.equals("none")) {
      throw new IllegalArgumentException(signalName(env, "COMPRESSION") + "=" + compression + ": expected gzip or none");
    }
    String service = Optional.ofNullable(env(env, "OTEL_SERVICE_NAME")).orElse(DEFAULT_SERVICE_NAME);
    Batch b = Batch.DEFAULT;
    Batch batch = new Batch(millis(env(env, "OTEL_BSP_SCHEDULE_DELAY"), "OTEL_BSP_SCHEDULE_DELAY", b.scheduleDelay()),
        count(env, "OTEL_BSP_MAX_QUEUE_SIZE", b.maxQueueSize()),
        count(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", b.maxExportBatchSize()),
        millis(env(env, "OTEL_BSP_EXPORT_TIMEOUT"), "OTEL_BSP_EXPORT_TIMEOUT", b.exportTimeout()));
    return Optional.of(new OtlpSettings(endpoint, headers, timeout, compression, service, batch));
  }

  /**
   * An http(s) URL. The traces-specific values are used as they are (as upstream's exporter takes
   * {@code otlp_traces_endpoint}), except that one without a path gets {@code /v1/traces}; the generic
   * {@code OTEL_EXPORTER_OTLP_ENDPOINT} is a base that {@code /v1/traces} is appended to, as the specification says.
   */
  static URI tracesUrl(String value, String name, boolean base) {
    URI uri;
    try {
      uri = new URI(value.strip());
    } catch (java.net.URISyntaxException e) {
      throw new IllegalArgumentException(name + ": not a URL: " + value);
    }
    String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
    if (!(scheme.equals("http") || scheme.equals("https")) || uri.getHost() == null) {
      throw new IllegalArgumentException(name + ": expected an http:// or https:// URL, found \"" + value + "\"");
    }
    String path = uri.getRawPath() == null ? "" : uri.getRawPath();
    if (base) {
      return URI.create(stripSlash(uri.toString()) + "/v1/traces");
    }
    return path.isEmpty() || path.equals("/") ? URI.create(stripSlash(uri.toString()) + "/v1/traces") : uri;
  }

  private static String stripSlash(String s) {
    return s.endsWith("/") ? s.substring(0, s.length() - 1) : s;
  }

  /** {@code key1=value1,key2=value2}, values percent-decoded (the W3C baggage form the specification uses). */
  static Map<String, String> headers(String value, String name) {
    Map<String, String> out = new LinkedHashMap<>();
    if (value == null || value.isBlank()) {
      return out;
    }
    for (String pair : value.split(",")) {
      if (pair.isBlank()) {
        continue;
      }
      int eq = pair.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException(name + ": expected key=value pairs separated by commas, found \"" + pair.strip() + "\"");
      }
      String key = pair.substring(0, eq).strip();
      String v = URLDecoder.decode(pair.substring(eq + 1).strip(), StandardCharsets.UTF_8);
      out.put(key, v);
    }
    return out;
  }

  private static Duration millis(String value, String name, Duration fallback) {
    if (value == null) {
      return fallback;
    }
    try {
      long ms = Long.parseLong(value.strip());
      if (ms < 0) {
        throw new NumberFormatException();
      }
      return ms == 0 ? fallback : Duration.ofMillis(ms);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + "=" + value + ": expected milliseconds (a non-negative integer)");
    }
  }

  private static int count(Map<String, String> env, String name, int fallback) {
    String value = env(env, name);
    if (value == null) {
      return fallback;
    }
    try {
      int n = Integer.parseInt(value.strip());
      if (n < 1) {
        throw new NumberFormatException();
      }
      return n;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + "=" + value + ": expected a positive integer");
    }
  }

  /** The traces-specific variable ({@code OTEL_EXPORTER_OTLP_TRACES_x}), else the generic one. */
  private static String signal(Map<String, String> env, String suffix) {
    String v = env(env, "OTEL_EXPORTER_OTLP_TRACES_" + suffix);
    return v != null ? v : env(env, "OTEL_EXPORTER_OTLP_" + suffix);
  }

  private static String signalName(Map<String, String> env, String suffix) {
    return env(env, "OTEL_EXPORTER_OTLP_TRACES_" + suffix) != null ? "OTEL_EXPORTER_OTLP_TRACES_" + suffix
        : "OTEL_EXPORTER_OTLP_" + suffix;
  }

  /** A variable's value, null when unset or blank. */
  private static String env(Map<String, String> env, String name) {
    String v = env.get(name);
    return v == null || v.isBlank() ? null : v.strip();
  }
}
