package dev.affinity.bench.jmh;

import dev.affinity.kv.PrefixIndex;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * An agent turn's prefix-index work at a 176k-token history (5,500 blocks of 32 tokens), over an index of 110 such
 * conversations on two ranks (605k blocks): the whole walk ({@link PrefixIndex#matchDepths}), the walk that continues
 * the conversation's last one ({@link PrefixIndex#walk}; the turn adds 28 blocks, and the rank lost 100 other blocks
 * since), and the backfill that stores the prompt again ({@link PrefixIndex#store}). The conversations are taken in
 * turn, so each walk starts cold, as a turn's does after the others' traffic.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xmx4g"})
@State(Scope.Benchmark)
public class PrefixWalkBenchmark {
  static final int CONVERSATIONS = 110;
  static final int BLOCKS = 5_500;
  static final int ADDED = 28;

  private PrefixIndex index;
  private int[] ranks;
  private long[][] prompts;
  private PrefixIndex.Walk[] lastWalks;
  private int next;

  @Setup(Level.Trial)
  public void setUp() {
    index = new PrefixIndex(10_000_000);
    ranks = new int[] {index.location("w", 0), index.location("w", 1)};
    SplittableRandom r = new SplittableRandom(46);
    prompts = new long[CONVERSATIONS][];
    lastWalks = new PrefixIndex.Walk[CONVERSATIONS];
    for (int c = 0; c < CONVERSATIONS; c++) {
      long[] keys = new long[BLOCKS];
      for (int i = 0; i < keys.length; i++) {
        keys[i] = r.nextLong();
      }
      prompts[c] = keys;
      int rank = ranks[c % 2];
      index.store(rank, keys, 0, BLOCKS - ADDED);  // the last turn's prompt
      lastWalks[c] = index.walk(java.util.Arrays.copyOf(keys, BLOCKS - ADDED), ranks, null);
      index.store(rank, keys);  // this turn's blocks, stored by the last turn's answer
    }
    long[] others = new long[100];
    for (int i = 0; i < others.length; i++) {
      others[i] = r.nextLong();
    }
    for (int rank : ranks) {  // what the ranks lost meanwhile: other conversations' blocks
      index.store(rank, others);
      index.remove(rank, others);
    }
  }

  private int conversation() {
    int c = next;
    next = (c + 1) % CONVERSATIONS;
    return c;
  }

  @Benchmark
  public int[] wholeWalk() {
    return index.matchDepths(prompts[conversation()], ranks);
  }

  @Benchmark
  public int[] continuedWalk() {
    int c = conversation();
    return index.walk(prompts[c], ranks, lastWalks[c]).depths();
  }

  @Benchmark
  public void backfill() {
    int c = conversation();
    index.store(ranks[c % 2], prompts[c]);
  }
}
