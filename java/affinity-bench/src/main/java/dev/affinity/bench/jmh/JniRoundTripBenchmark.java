package dev.affinity.bench.jmh;

import dev.affinity.executor.ExecutorRequest;
import dev.affinity.executor.ExecutorResponse;
import dev.affinity.nativebridge.NativeExecutor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Enqueue + await round trip of one request through JNI, unbatched and in batches of 64, on a
 * virtual-clock CPU executor whose timing model costs nothing (so the figure is bridge + executor
 * bookkeeping). {@code native/bench/native_bench.cpp} does the same work in C++ without JNI;
 * docs/benchmarks.md reports the ratio.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Dorg.bytedeco.javacpp.maxPhysicalBytes=0"})
@State(Scope.Thread)
public class JniRoundTripBenchmark {
  static final String ZERO_COST = """
      {"clock": {"mode": "virtual"}, "num_ranks": 1, "tokens_per_block": 32, "kv_blocks_per_rank": 65536,
       "max_batch_size": 256, "max_num_tokens": 65536, "block_reuse": {"enabled": false},
       "kv_events": {"enabled": false},
       "timing": {"iteration_overhead_us": 0, "prefill_us_per_token": 0, "prefill_us_per_token_sq": 0,
                  "decode_base_us": 0, "decode_us_per_seq": 0, "decode_us_per_kv_token": 0}}""";
  static final int BATCH = 64;
  static final int PROMPT_TOKENS = 128;

  private NativeExecutor executor;
  private ExecutorRequest single;
  private List<ExecutorRequest> batch;

  @Setup(Level.Trial)
  public void setUp() {
    executor = NativeExecutor.create("sim", ZERO_COST);
    int[] prompt = new int[PROMPT_TOKENS];
    for (int i = 0; i < prompt.length; i++) {
      prompt[i] = 1 + i;
    }
    single = ExecutorRequest.builder(prompt, 1).conversationId("bench").build();
    batch = new ArrayList<>();
    for (int i = 0; i < BATCH; i++) {
      batch.add(single.toBuilder().clientRequestId(i).build());
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    executor.close();
  }

  private int drain(int expected) {
    int finals = 0;
    while (finals < expected) {
      long end = executor.nextIterationEndMicros();
      if (end >= 0) {
        executor.advanceTo(end);
      }
      for (ExecutorResponse r : executor.awaitResponses(1024, Duration.ZERO)) {
        if (r.isFinal()) {
          finals++;
        }
      }
    }
    return finals;
  }

  @Benchmark
  public int unbatched() {
    executor.enqueue(single);
    return drain(1);
  }

  @Benchmark
  @OperationsPerInvocation(BATCH)
  public int batched() {
    executor.enqueueAll(batch);
    return drain(BATCH);
  }
}
