package dev.affinity.bench.jmh;

import dev.affinity.kv.PrefixIndex;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * Heap bytes per indexed (block, location) entry of the prefix index: fills it with 1M blocks over
 * 64 x 8 locations and compares the live heap before and after. Run: java ... IndexMemoryProbe.
 */
public final class IndexMemoryProbe {
  private IndexMemoryProbe() {}

  static long usedAfterGc() throws InterruptedException {
    Runtime rt = Runtime.getRuntime();
    for (int i = 0; i < 5; i++) {
      System.gc();
      Thread.sleep(100);
    }
    return rt.totalMemory() - rt.freeMemory();
  }

  public static void main(String[] args) throws Exception {
    int blocks = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
    long before = usedAfterGc();
    PrefixIndex index = new PrefixIndex(1 << 22);
    SplittableRandom rnd = new SplittableRandom(1);
    int perChain = 512;
    for (int c = 0; c < blocks / perChain; c++) {
      long[] keys = new long[perChain];
      for (int i = 0; i < perChain; i++) {
        keys[i] = rnd.nextLong();
      }
      index.store(index.location("w" + (c % 64), c % 8), keys);
    }
    long after = usedAfterGc();
    System.out.printf(Locale.ROOT, "entries %d, distinct blocks %d, heap %.1f MiB, %.1f bytes per entry%n",
        index.size(), index.distinctBlocks(), (after - before) / 1048576.0, (double) (after - before) / index.size());
    if (index.size() == 0) {
      throw new IllegalStateException();
    }
  }
}
