package dev.affinity.server.metrics;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;

/** Upstream's histogram buckets ({@code tensorrt_llm/serve/perf_metrics.py}) and timers that publish exactly them. */
public final class Buckets {
  /** {@code SHORT_TIME_BUCKETS}, seconds. */
  public static final double[] SHORT = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
      5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
  /** {@code LONG_TIME_BUCKETS}, seconds. */
  public static final double[] LONG = {0.1, 0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0,
      50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0};

  private Buckets() {}

  /** A timer whose Prometheus histogram has exactly {@code buckets} (seconds), and no percentile buckets. */
  public static Timer histogram(MeterRegistry registry, String name, String description, double[] buckets) {
    Duration[] slos = new Duration[buckets.length];
    for (int i = 0; i < buckets.length; i++) {
      slos[i] = Duration.ofNanos(Math.round(buckets[i] * 1e9));
    }
    return Timer.builder(name).description(description).serviceLevelObjectives(slos).register(registry);
  }
}
