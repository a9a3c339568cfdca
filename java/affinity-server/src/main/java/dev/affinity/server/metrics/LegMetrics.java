package dev.affinity.server.metrics;

import dev.affinity.frontend.AdmittedRequest;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Selection;
import dev.affinity.tracing.RequestTrace;
import dev.affinity.tracing.RequestTracer;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerReport;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The metrics of every leg, read off the events the orchestration tells a request's trace (so metrics and tracing
 * see one account): upstream's per-role client metrics under its names and buckets ({@code ctx_} and {@code gen_}
 * prefixes, {@code CLIENT_METRICS_DEFINITIONS} in {@code tensorrt_llm/serve/perf_metrics.py}, counted as
 * {@code tensorrt_llm/serve/openai_client.py} does), and Affinity's own: the KV-cache hit each router predicted
 * against the one its workers served, the router's decision time, and streams resumed on another worker. Names and
 * meanings: docs/metrics.md.
 */
public final class LegMetrics implements RequestTracer {
  private final Map<Fleet, RoleMeters> roles = new EnumMap<>(Fleet.class);
  private final Counter streamResumes;
  /** Every request's trace: it keeps nothing of a request (the per-leg state is in {@link Leg}). */
  private final Trace trace = new Trace();

  public LegMetrics(MeterRegistry registry) {
    for (Fleet fleet : Fleet.values()) {
      roles.put(fleet, new RoleMeters(registry, fleet));
    }
    streamResumes = Counter.builder("affinity.stream.resumes")
        .description("Client streams a worker cut mid-way that went on on another worker").register(registry);
  }

  @Override
  public RequestTrace start(AdmittedRequest request) {
    return trace;
  }

  /** Upstream's client-side name of a fleet's role. */
  static String prefix(Fleet fleet) {
    return fleet == Fleet.CONTEXT ? "ctx" : "gen";
  }

  /** One fleet's meters. */
  private static final class RoleMeters {
    final Counter total;
    final Counter errors;
    final Counter retries;
    final Counter completed;
    final Timer firstToken;
    final Timer perToken;
    final Timer complete;
    final Counter promptTokens;
    final Counter cachedTokens;
    final Counter predictedTokens;
    final Timer decision;

    RoleMeters(MeterRegistry registry, Fleet fleet) {
      String p = prefix(fleet) + ".";
      total = Counter.builder(p + "total.requests").description("Total number of requests").register(registry);
      errors = Counter.builder(p + "error.requests").description("Total number of error requests").register(registry);
      retries = Counter.builder(p + "retry.requests").description("Total number of retry requests").register(registry);
      completed = Counter.builder(p + "completed.requests").description("Total number of completed requests")
          .register(registry);
      // upstream's descriptions of these three, word for word (they describe other spans than the ones measured)
      firstToken = Buckets.histogram(registry, p + "first.token.latency",
          "Histogram of latency from first token to completion in seconds", Buckets.SHORT);
      complete = Buckets.histogram(registry, p + "complete.latency",
          "Histogram of latency from request arrival to last token in seconds", Buckets.LONG);
      perToken = Buckets.histogram(registry, p + "per.token.latency",
          "Histogram of latency from request arrival to completion in seconds", Buckets.SHORT);
      String tag = fleet.name().toLowerCase();
      promptTokens = Counter.builder("affinity.kv.prompt.tokens").tag("fleet", tag)
          .description("Prompt tokens of the legs whose worker reported its KV-cache reuse").register(registry);
      cachedTokens = Counter.builder("affinity.kv.cached.tokens").tag("fleet", tag)
          .description("Prompt tokens those workers served from their KV cache").register(registry);
      predictedTokens = Counter.builder("affinity.kv.predicted.cached.tokens").tag("fleet", tag)
          .description("Prompt tokens the router expected cached where it sent those legs").register(registry);
      decision = Timer.builder("affinity.router.decision").tag("fleet", tag)
          .description("Time the fleet's router took to choose a worker and rank")
          .publishPercentileHistogram()
          .minimumExpectedValue(Duration.ofNanos(1_000))
          .maximumExpectedValue(Duration.ofMillis(100))
          .register(registry);
    }
  }

  /** The requests' account, one instance for all: it only counts (each leg's times are in its {@link Leg}). */
  private final class Trace implements RequestTrace {
    @Override
    public Routing routing(Fleet fleet) {
      long start = System.nanoTime();
      RoleMeters m = roles.get(fleet);
      return new Routing() {
        @Override
        public void selected(Selection selection) {
          m.decision.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
        }
      };
    }

    @Override
    public LegTrace legSent(Fleet fleet, long attempt, Selection selection) {
      RoleMeters m = roles.get(fleet);
      m.total.increment();
      return new Leg(m, selection);
    }

    @Override
    public void retried(int retries, Fleet fleet, String workerId, WorkerFailure failure) {
      roles.get(fleet).retries.increment();
    }

    @Override
    public void resumed(int generatedTokens) {
      streamResumes.increment();
    }
  }

  /** One leg: its send time, the last chunk's. */
  private static final class Leg implements RequestTrace.LegTrace {
    private final RoleMeters m;
    private final Selection selection;
    private final long sent = System.nanoTime();
    private long lastChunk = -1;

    Leg(RoleMeters m, Selection selection) {
      this.m = m;
      this.selection = selection;
    }

    @Override
    public void chunk() {
      long now = System.nanoTime();
      if (lastChunk < 0) {
        m.firstToken.record(now - sent, TimeUnit.NANOSECONDS);
      } else {
        m.perToken.record(now - lastChunk, TimeUnit.NANOSECONDS);
      }
      lastChunk = now;
    }

    @Override
    public void completed(WorkerReport report) {
      m.completed.increment();
      m.complete.record(System.nanoTime() - sent, TimeUnit.NANOSECONDS);
      if (report.promptTokens() > 0 && report.reusedTokens() >= 0) {
        m.promptTokens.increment(report.promptTokens());
        m.cachedTokens.increment(Math.min(report.reusedTokens(), report.promptTokens()));
        m.predictedTokens.increment(Math.min(Math.max(0, selection.matchedTokens()), report.promptTokens()));
      }
    }

    @Override
    public void failed(WorkerFailure failure) {
      m.errors.increment();
      m.completed.increment();  // upstream's _finish_request counts every request it finishes
    }
  }
}
