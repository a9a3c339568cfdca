package dev.affinity.server.fleet;

import dev.affinity.nativebridge.worker.NativeWorker;
import dev.affinity.server.worker.HttpWorker;
import dev.affinity.worker.Worker;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The meters of each worker (requests in flight; for in-process workers also the prefix-hit ratio and the rows of
 * an unexpected shape their executor skipped), registered when the worker joins and removed when it leaves.
 */
final class WorkerGauges {
  private final MeterRegistry registry;
  private final Map<Worker, List<Meter>> meters = new ConcurrentHashMap<>();

  WorkerGauges(MeterRegistry registry) {
    this.registry = registry;
  }

  /** Registers {@code w}'s meters. */
  void register(Worker w) {
    List<Meter> m = new ArrayList<>();
    if (w instanceof NativeWorker n) {
      m.add(Gauge.builder("affinity_worker_in_flight", n, x -> x.isAlive() ? x.executor().iterationStats().activeRequests() : 0)
          .description("Requests the worker has admitted and not finished").tag("worker", w.id()).register(registry));
      m.add(Gauge.builder("affinity_worker_prefix_hit_ratio", n, x -> x.isAlive() ? x.executor().iterationStats().prefixHitRatio() : 0)
          .description("Share of the prompt tokens the in-process worker served from its KV cache")
          .tag("worker", w.id()).register(registry));
      m.add(FunctionCounter.builder("affinity_worker_rejected_poll_items", n,
              x -> x.isAlive() ? x.executor().iterationStats().rejectedPollItems() : 0)
          .description("KV events and statistics rows of an unexpected shape that the executor skipped")
          .tag("worker", w.id()).register(registry));
    } else if (w instanceof HttpWorker h) {
      m.add(Gauge.builder("affinity_worker_in_flight", h, x -> x.inFlight())
          .description("Requests the frontend has in flight at the remote worker").tag("worker", w.id()).register(registry));
    }
    meters.put(w, m);
  }

  /** Removes {@code w}'s meters (a cluster worker that left). */
  void remove(Worker w) {
    List<Meter> m = meters.remove(w);
    if (m != null) {
      m.forEach(registry::remove);
    }
  }
}
