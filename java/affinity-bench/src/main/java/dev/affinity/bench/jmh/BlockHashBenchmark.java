package dev.affinity.bench.jmh;

import dev.affinity.kv.BlockHasher;
import dev.affinity.kv.HashAlgorithm;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/** Block hashing of one 16k-token prompt per algorithm; tokens/s = 16384 / (time per op). */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Thread)
public class BlockHashBenchmark {
  @Param({"v1_block_key", "v2_sha256", "v2_sha256_64"})
  public String algo;

  @Param({"32"})
  public int tokensPerBlock;

  private BlockHasher hasher;
  private int[] prompt;

  @Setup
  public void setUp() {
    hasher = new BlockHasher(HashAlgorithm.fromWireName(algo), tokensPerBlock);
    prompt = new SplittableRandom(1).ints(16_384, 0, 150_000).toArray();
  }

  @Benchmark
  public long[] hash16kTokens() {
    return hasher.keys(prompt, null);
  }
}
