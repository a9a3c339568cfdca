package dev.affinity.bench.jmh;

import dev.affinity.config.Location;
import dev.affinity.config.RouterConfig;
import dev.affinity.routing.Fleet;
import dev.affinity.kv.BlockHasher;
import dev.affinity.kv.HashAlgorithm;
import dev.affinity.kv.PrefixIndex;
import dev.affinity.routing.Outcome;
import dev.affinity.routing.Router;
import dev.affinity.routing.RouterContext;
import dev.affinity.routing.RouterFactory;
import dev.affinity.routing.RoutingRequest;
import dev.affinity.routing.Selection;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerInfo;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Decision latency of each router (select + release) with 64 workers x 8 visible ranks, 1M indexed
 * blocks and 16k-token prompts, including the prompt's block hashing. SampleTime gives p50 / p99.
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xmx4g"})
@State(Scope.Benchmark)
public class RouterDecisionBenchmark {
  static final int WORKERS = 64;
  static final int RANKS = 8;
  static final int TOKENS_PER_BLOCK = 32;
  static final int PROMPT_TOKENS = 16_384;
  static final int CONVERSATIONS = 2_000;  // x 512 blocks = 1,024,000 indexed blocks

  @Param({"round_robin", "load_balancing", "kv_cache_aware", "conversation", "affinity"})
  public String type;

  private Router router;
  private int[][] prompts;
  private long next;

  /** A worker that is only routed to (routing and index benchmarks): sending to it is an error. */
  public record BenchWorker(String id, WorkerInfo info) implements Worker {
    @Override
    public boolean isAlive() {
      return true;
    }

    @Override
    public dev.affinity.worker.WorkerCall send(dev.affinity.worker.WorkerRequest request,
        dev.affinity.worker.WorkerListener listener) {
      throw new UnsupportedOperationException("routing-only benchmark worker");
    }
  }

  @Setup(Level.Trial)
  public void setUp() {
    PrefixIndex index = new PrefixIndex(1 << 20);
    RouterContext ctx = new RouterContext(Fleet.CONTEXT, dev.affinity.config.SubagentScope.CONTEXT, System::nanoTime,
        index, RouterContext.DEFAULT_TTL, 0);
    router = new RouterFactory().create(new RouterConfig(type, Location.unknown("bench"), Map.of(), Map.of()),
        "context_servers", ctx);
    WorkerInfo info = new WorkerInfo(TOKENS_PER_BLOCK, HashAlgorithm.V1_BLOCK_KEY, RANKS, true, 256);
    for (int w = 0; w < WORKERS; w++) {
      router.addWorker(new BenchWorker("w" + w, info));
    }
    SplittableRandom rnd = new SplittableRandom(42);
    BlockHasher hasher = new BlockHasher(HashAlgorithm.V1_BLOCK_KEY, TOKENS_PER_BLOCK);
    prompts = new int[CONVERSATIONS][];
    for (int c = 0; c < CONVERSATIONS; c++) {
      prompts[c] = rnd.ints(PROMPT_TOKENS, 0, 150_000).toArray();
      long[] keys = hasher.keys(prompts[c], null);
      index.store(index.location("w" + (c % WORKERS), c % RANKS), keys);
    }
    if (index.size() < 1_000_000) {
      throw new IllegalStateException("index holds only " + index.size() + " blocks");
    }
  }

  @Benchmark
  public int decide() {
    long i = next++;
    int c = (int) (i % CONVERSATIONS);
    RoutingRequest r = RoutingRequest.builder(i, Fleet.CONTEXT).routingKey("conv-" + c).tokens(prompts[c]).build();
    Selection s = router.select(r, Set.of());
    s.release(Outcome.CANCELLED);
    return s.rank();
  }
}
