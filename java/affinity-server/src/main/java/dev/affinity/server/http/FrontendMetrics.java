package dev.affinity.server.http;

import dev.affinity.server.metrics.Buckets;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The frontend's Micrometer meters. Prometheus names (after Micrometer's renaming) are in the
 * constants' comments and in docs/frontend.md.
 */
final class FrontendMetrics {
  /** {@code affinity_frontend_requests_total{endpoint,status,outcome}}. */
  static final String REQUESTS = "affinity.frontend.requests";
  /** {@code affinity_frontend_ttft_seconds{endpoint,stream}} (histogram). */
  static final String TTFT = "affinity.frontend.ttft";
  /** {@code affinity_frontend_inter_token_seconds{endpoint}} (histogram). */
  static final String INTER_TOKEN = "affinity.frontend.inter.token";
  /** {@code affinity_frontend_request_duration_seconds{endpoint}} (histogram). */
  static final String DURATION = "affinity.frontend.request.duration";
  /** {@code affinity_frontend_response_bytes{endpoint}} (summary of body bytes). */
  static final String RESPONSE_BYTES = "affinity.frontend.response.bytes";
  /** {@code affinity_frontend_in_flight}. */
  static final String IN_FLIGHT = "affinity.frontend.in.flight";
  /** {@code affinity_frontend_stream_pauses_total}. */
  static final String STREAM_PAUSES = "affinity.frontend.stream.pauses";
  /** {@code affinity_frontend_stream_buffered_bytes} (summary). */
  static final String STREAM_BUFFERED = "affinity.frontend.stream.buffered";

  private final MeterRegistry registry;
  private final UpstreamServerMeters upstream;
  private final AtomicInteger inFlight = new AtomicInteger();
  private final Counter streamPauses;
  private final DistributionSummary streamBuffered;
  private final ConcurrentHashMap<String, EndpointMeters> byEndpoint = new ConcurrentHashMap<>();

  FrontendMetrics(MeterRegistry registry) {
    this.registry = registry;
    this.upstream = new UpstreamServerMeters(registry);
    Gauge.builder(IN_FLIGHT, inFlight, AtomicInteger::get)
        .description("Requests read and not yet answered")
        .register(registry);
    streamPauses = Counter.builder(STREAM_PAUSES)
        .description("Times a slow client paused reading from the worker of its stream (backpressure)")
        .register(registry);
    streamBuffered = DistributionSummary.builder(STREAM_BUFFERED)
        .description("Bytes waiting for a streaming client right after each chunk was handed to its connection")
        .baseUnit("bytes")
        .register(registry);
  }

  void streamPaused() {
    streamPauses.increment();
  }

  void streamBuffered(long bytes) {
    streamBuffered.record(bytes);
  }

  void started() {
    inFlight.incrementAndGet();
  }

  /** A completion request is handed to the orchestration {@code queuedNanos} after it was read. */
  void processing(boolean stream, long queuedNanos) {
    upstream.processing(stream, queuedNanos);
  }

  /** A completion request was answered with {@code status} (upstream's response and exception counters). */
  void completionAnswered(int status) {
    upstream.answered(status);
  }

  void finished(String endpoint, int status, String outcome, long durationNanos, long bytes) {
    inFlight.decrementAndGet();
    EndpointMeters m = meters(endpoint);
    m.requests(status, outcome).increment();
    m.duration.record(durationNanos, TimeUnit.NANOSECONDS);
    m.bytes.record(bytes);
  }

  void ttft(String endpoint, boolean stream, long nanos) {
    EndpointMeters m = meters(endpoint);
    (stream ? m.ttftStream() : m.ttftWhole()).record(nanos, TimeUnit.NANOSECONDS);
  }

  void interToken(String endpoint, long nanos) {
    meters(endpoint).interToken().record(nanos, TimeUnit.NANOSECONDS);
  }

  private EndpointMeters meters(String endpoint) {
    EndpointMeters m = byEndpoint.get(endpoint);
    return m != null ? m : byEndpoint.computeIfAbsent(endpoint, e -> new EndpointMeters(registry, e));
  }

  /**
   * One endpoint's meters, resolved once instead of per request (a builder and a registry lookup per meter and
   * request cost as much as the rest of the bookkeeping). The meters a request may never touch (the TTFT of the
   * other kind, inter-token times, a status) are registered when first used, as before, so the scrape shows the
   * same series.
   */
  private static final class EndpointMeters {
    private final MeterRegistry registry;
    private final String endpoint;
    final Timer duration;
    final DistributionSummary bytes;
    private volatile Timer ttftStream;
    private volatile Timer ttftWhole;
    private volatile Timer interToken;
    /** Request counters by outcome, then by status (an array over 0..599; other statuses go through the map). */
    private final ConcurrentHashMap<String, AtomicReferenceArray<Counter>> requests = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Counter> otherRequests = new ConcurrentHashMap<>();

    EndpointMeters(MeterRegistry registry, String endpoint) {
      this.registry = registry;
      this.endpoint = endpoint;
      duration = Timer.builder(DURATION)
          .description("Time from a request being read to the end of its response")
          .tag("endpoint", endpoint)
          .publishPercentileHistogram()
          .minimumExpectedValue(Duration.ofMillis(1))
          .maximumExpectedValue(Duration.ofMinutes(10))
          .register(registry);
      bytes = DistributionSummary.builder(RESPONSE_BYTES)
          .description("Response body bytes")
          .baseUnit("bytes")
          .tag("endpoint", endpoint)
          .register(registry);
    }

    Counter requests(int status, String outcome) {
      if (status < 0 || status >= 600) {
        return otherRequests.computeIfAbsent(status + " " + outcome, k -> requestCounter(status, outcome));
      }
      AtomicReferenceArray<Counter> byStatus = requests.get(outcome);
      if (byStatus == null) {
        byStatus = requests.computeIfAbsent(outcome, o -> new AtomicReferenceArray<>(600));
      }
      Counter c = byStatus.get(status);
      if (c == null) { // a race registers the same counter twice: the registry hands back the first
        c = requestCounter(status, outcome);
        byStatus.set(status, c);
      }
      return c;
    }

    private Counter requestCounter(int status, String outcome) {
      return Counter.builder(REQUESTS)
          .description("Requests answered, by endpoint, HTTP status and outcome")
          .tag("endpoint", endpoint)
          .tag("status", Integer.toString(status))
          .tag("outcome", outcome)
          .register(registry);
    }

    Timer ttftStream() {
      Timer t = ttftStream;
      if (t == null) {
        t = ttft(true);
        ttftStream = t;
      }
      return t;
    }

    Timer ttftWhole() {
      Timer t = ttftWhole;
      if (t == null) {
        t = ttft(false);
        ttftWhole = t;
      }
      return t;
    }

    private Timer ttft(boolean stream) {
      return Timer.builder(TTFT)
          .description("Time from a completion request being read to its first streamed chunk or its response")
          .tag("endpoint", endpoint)
          .tag("stream", Boolean.toString(stream))
          .publishPercentileHistogram()
          .minimumExpectedValue(Duration.ofMillis(1))
          .maximumExpectedValue(Duration.ofMinutes(5))
          .register(registry);
    }

    Timer interToken() {
      Timer t = interToken;
      if (t == null) {
        t = Timer.builder(INTER_TOKEN)
            .description("Time between consecutive streamed chunks of one response")
            .tag("endpoint", endpoint)
            .publishPercentileHistogram()
            .minimumExpectedValue(Duration.ofNanos(100_000))
            .maximumExpectedValue(Duration.ofSeconds(30))
            .register(registry);
        interToken = t;
      }
      return t;
    }
  }

  int inFlight() {
    return inFlight.get();
  }

  /**
   * The counters and the queue-latency histogram of upstream's disaggregated server, under its names and buckets
   * ({@code SERVER_METRICS_DEFINITIONS} in {@code tensorrt_llm/serve/perf_metrics.py}; counted as
   * {@code openai_disagg_server.py} does), so that dashboards built for {@code trtllm-serve disaggregated} read this
   * frontend too. No labels, as upstream.
   */
  static final class UpstreamServerMeters {
    private final Counter totalRequests;
    private final Counter streamRequests;
    private final Counter nonstreamRequests;
    private final Counter validationExceptions;
    private final Counter httpExceptions;
    private final Counter internalErrors;
    private final Counter totalResponses;
    private final Timer queueLatency;

    UpstreamServerMeters(MeterRegistry registry) {
      totalRequests = counter(registry, "total.requests", "Total number of requests");
      streamRequests = counter(registry, "stream.requests", "Total number of stream requests");
      nonstreamRequests = counter(registry, "nonstream.requests", "Total number of non-stream requests");
      validationExceptions = counter(registry, "validation.exceptions", "Total number of validation exceptions");
      httpExceptions = counter(registry, "http.exceptions", "Total number of HTTP exceptions");
      internalErrors = counter(registry, "internal.errors", "Total number of internal errors");
      totalResponses = counter(registry, "total.responses", "Total number of responses");
      queueLatency = Buckets.histogram(registry, "queue.latency",
          "Histogram of latency from request arrival to being processed in seconds", Buckets.SHORT);
    }

    private static Counter counter(MeterRegistry registry, String name, String description) {
      return Counter.builder(name).description(description).register(registry);
    }

    void processing(boolean stream, long queuedNanos) {
      totalRequests.increment();
      (stream ? streamRequests : nonstreamRequests).increment();
      queueLatency.record(queuedNanos, TimeUnit.NANOSECONDS);
    }

    /**
     * Upstream counts a response when its handler returned one, a validation exception for a body its model
     * refused (400), an internal error for a 500, and an HTTP exception for every other error status; a client that
     * went away (499) is none of them.
     */
    void answered(int status) {
      if (status < 400) {
        totalResponses.increment();
      } else if (status == 400 || status == 422) {
        validationExceptions.increment();
      } else if (status == 500) {
        internalErrors.increment();
      } else if (status != 499) {
        httpExceptions.increment();
      }
    }
  }
}
