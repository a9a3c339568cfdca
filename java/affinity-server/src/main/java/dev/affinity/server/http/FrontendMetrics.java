package dev.affinity.server.http;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

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
  private final AtomicInteger inFlight = new AtomicInteger();
  private final Counter streamPauses;
  private final DistributionSummary streamBuffered;

  FrontendMetrics(MeterRegistry registry) {
    this.registry = registry;
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

  void finished(String endpoint, int status, String outcome, long durationNanos, long bytes) {
    inFlight.decrementAndGet();
    Counter.builder(REQUESTS)
        .description("Requests answered, by endpoint, HTTP status and outcome")
        .tag("endpoint", endpoint)
        .tag("status", Integer.toString(status))
        .tag("outcome", outcome)
        .register(registry)
        .increment();
    Timer.builder(DURATION)
        .description("Time from a request being read to the end of its response")
        .tag("endpoint", endpoint)
        .publishPercentileHistogram()
        .minimumExpectedValue(Duration.ofMillis(1))
        .maximumExpectedValue(Duration.ofMinutes(10))
        .register(registry)
        .record(durationNanos, TimeUnit.NANOSECONDS);
    DistributionSummary.builder(RESPONSE_BYTES)
        .description("Response body bytes")
        .baseUnit("bytes")
        .tag("endpoint", endpoint)
        .register(registry)
        .record(bytes);
  }

  void ttft(String endpoint, boolean stream, long nanos) {
    Timer.builder(TTFT)
        .description("Time from a completion request being read to its first streamed chunk or its response")
        .tag("endpoint", endpoint)
        .tag("stream", Boolean.toString(stream))
        .publishPercentileHistogram()
        .minimumExpectedValue(Duration.ofMillis(1))
        .maximumExpectedValue(Duration.ofMinutes(5))
        .register(registry)
        .record(nanos, TimeUnit.NANOSECONDS);
  }

  void interToken(String endpoint, long nanos) {
    Timer.builder(INTER_TOKEN)
        .description("Time between consecutive streamed chunks of one response")
        .tag("endpoint", endpoint)
        .publishPercentileHistogram()
        .minimumExpectedValue(Duration.ofNanos(100_000))
        .maximumExpectedValue(Duration.ofSeconds(30))
        .register(registry)
        .record(nanos, TimeUnit.NANOSECONDS);
  }

  int inFlight() {
    return inFlight.get();
  }
}
