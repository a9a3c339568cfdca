package dev.affinity.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A walk that continues the last one ({@link PrefixIndex#walk}) finds what the whole walk finds
 * ({@link PrefixIndex#matchDepths}), whatever happened between them: conversations whose prompts grow, are cut back
 * or rewritten; blocks stored, evicted by the workers, dropped by the index's own bound, a location forgotten or its
 * cache made again; more removals than the log holds; other candidates; another index's walk.
 */
class PrefixWalkTest {

  @Test
  void continuedWalksFindWhatWholeWalksFind() {
    for (int seed = 0; seed < 40; seed++) {
      Random r = new Random(seed);
      PrefixIndex idx = new PrefixIndex(300 + r.nextInt(2_000), 1 + r.nextInt(64));
      PrefixIndex other = new PrefixIndex(10_000);
      int[] locs = new int[2 + r.nextInt(5)];
      for (int i = 0; i < locs.length; i++) {
        locs[i] = idx.location("w" + i / 2, i % 2);
        other.location("w" + i / 2, i % 2);
      }
      int conversations = 6;
      long[][] prompts = new long[conversations][];
      PrefixIndex.Walk[] walks = new PrefixIndex.Walk[conversations];
      long fresh = 1;
      int continued = 0;
      for (int step = 0; step < 1_500; step++) {
        int c = r.nextInt(conversations);
        long[] last = prompts[c] == null ? new long[0] : prompts[c];
        int keep = switch (r.nextInt(6)) {
          case 0 -> r.nextInt(last.length + 1);  // cut back or rewritten from a block on
          default -> last.length;  // a turn that adds
        };
        long[] next = Arrays.copyOf(last, keep + r.nextInt(40));
        for (int i = keep; i < next.length; i++) {
          next[i] = fresh++ * 0x9E3779B97F4A7C15L;
        }
        prompts[c] = next;
        int[] candidates = r.nextInt(8) == 0 ? new int[] {locs[r.nextInt(locs.length)]} : locs;
        PrefixIndex.Walk memo = r.nextInt(20) == 0 ? other.walk(next, candidates, null) : walks[c];
        PrefixIndex.Walk walk = idx.walk(next, candidates, memo);
        assertArrayEquals(idx.matchDepths(next, candidates), walk.depths(), "seed " + seed + ", step " + step);
        continued += memo != null ? 1 : 0;
        walks[c] = walk;
        // what the workers do meanwhile
        for (int e = r.nextInt(4); e > 0; e--) {
          int loc = locs[r.nextInt(locs.length)];
          long[] p = prompts[r.nextInt(conversations)];
          if (p == null || p.length == 0) {
            continue;
          }
          switch (r.nextInt(10)) {
            case 0, 1, 2, 3 -> idx.store(loc, p, 0, r.nextInt(p.length + 1));  // a prefix (may push others out)
            case 4, 5 -> idx.store(loc, p, r.nextInt(p.length), p.length);  // a tail without its prefix
            case 6, 7 -> {  // the worker evicts a few of them
              long[] gone = new long[1 + r.nextInt(Math.min(p.length, 80))];
              for (int i = 0; i < gone.length; i++) {
                gone[i] = p[r.nextInt(p.length)];
              }
              idx.remove(loc, gone);
            }
            case 8 -> idx.remove(loc, new long[] {fresh++});  // a block no prompt has
            default -> {
              if (r.nextInt(5) == 0) {
                idx.forgetBlocks(loc);
              } else if (r.nextInt(5) == 0) {
                idx.created(loc, 1000);
              }
            }
          }
        }
      }
      assertTrue(continued > 1_000, "most walks continued one");
    }
  }

  @Test
  void aWalkWithoutChangesLooksUpOnlyTheNewBlocksAndTheFirstMissing() {
    PrefixIndex idx = new PrefixIndex(100_000);
    int a = idx.location("a", 0);
    int b = idx.location("a", 1);
    long[] prompt = PrefixIndexTest.keys(1000, 1);
    idx.store(a, prompt);
    PrefixIndex.Walk first = idx.walk(prompt, new int[] {a, b}, null);
    assertArrayEquals(new int[] {1000, 0}, first.depths());
    long[] next = PrefixIndexTest.keys(1010, 1);
    idx.store(a, next, 0, 1005);
    PrefixIndex.Walk second = idx.walk(next, new int[] {a, b}, first);
    assertArrayEquals(new int[] {1005, 0}, second.depths());
    idx.remove(a, new long[] {500});
    assertArrayEquals(new int[] {499, 0}, idx.walk(next, new int[] {a, b}, second).depths(), "a lost block is seen");
    idx.store(a, next);
    idx.store(b, next, 0, 3);
    assertArrayEquals(new int[] {1010, 3}, idx.walk(next, new int[] {a, b}, second).depths());
    assertEquals(idx.matchDepths(next, new int[] {b})[0], 3);
  }
}
