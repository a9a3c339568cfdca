package dev.affinity.routing;

import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.when;

import dev.affinity.config.SubagentScope;
import dev.affinity.kv.HashAlgorithm;
import dev.affinity.kv.PrefixIndex;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerInfo;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/** Mockito workers, a controllable clock and request builders for router tests. */
final class RouterTestSupport {
  private RouterTestSupport() {}

  static Worker worker(String id) {
    return worker(id, 4, false, 1, 64);
  }

  static Worker worker(String id, int tokensPerBlock, boolean ranksVisible, int ranks, int maxBatch) {
    Worker w = mock(Worker.class, id);
    when(w.id()).thenReturn(id);
    when(w.info()).thenReturn(new WorkerInfo(tokensPerBlock, HashAlgorithm.V1_BLOCK_KEY, ranks, ranksVisible, maxBatch));
    when(w.isAlive()).thenReturn(true);
    return w;
  }

  /** A plain worker (no Mockito): mocks record every call, which load tests cannot afford. */
  record PlainWorker(String id, WorkerInfo info) implements Worker {
    @Override
    public boolean isAlive() {
      return true;
    }

    @Override
    public dev.affinity.worker.WorkerCall send(dev.affinity.worker.WorkerRequest request,
        dev.affinity.worker.WorkerListener listener) {
      throw new UnsupportedOperationException("routing-only test worker");
    }
  }

  static Worker plainWorker(String id, int tokensPerBlock, boolean ranksVisible, int ranks, int maxBatch) {
    return new PlainWorker(id, new WorkerInfo(tokensPerBlock, HashAlgorithm.V1_BLOCK_KEY, ranks, ranksVisible, maxBatch));
  }

  static final class FakeClock {
    final AtomicLong nanos = new AtomicLong(1_000_000_000L);

    long now() {
      return nanos.get();
    }

    void advance(Duration d) {
      nanos.addAndGet(d.toNanos());
    }
  }

  static RouterContext context(Fleet fleet, FakeClock clock) {
    return new RouterContext(fleet, SubagentScope.CONTEXT, clock::now, new PrefixIndex(100_000), RouterContext.DEFAULT_TTL, 7);
  }

  static RouterContext context(Fleet fleet, SubagentScope scope, FakeClock clock) {
    return new RouterContext(fleet, scope, clock::now, new PrefixIndex(100_000), RouterContext.DEFAULT_TTL, 7);
  }

  static Router create(String type, Map<String, Object> args, RouterContext ctx) {
    return new RouterFactory().create(new dev.affinity.config.RouterConfig(type, dev.affinity.config.Location.unknown("t"),
        args, Map.of()), "context_servers", ctx);
  }

  static int[] tokens(int n, int base) {
    int[] t = new int[n];
    for (int i = 0; i < n; i++) {
      t[i] = base + i;
    }
    return t;
  }

  static RoutingRequest req(long id, String key, int[] tokens) {
    return RoutingRequest.builder(id, Fleet.CONTEXT).routingKey(key).tokens(tokens).build();
  }

  static RoutingRequest req(long id, String key) {
    return req(id, key, tokens(64, 1000 + (int) id * 100));
  }
}
