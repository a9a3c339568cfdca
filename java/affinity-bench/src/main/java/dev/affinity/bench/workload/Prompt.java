package dev.affinity.bench.workload;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A prompt as a list of content segments (a framework prefix, a task, a tool result, an earlier
 * response...), each with an id that stands for its tokens. Two prompts that begin with the same
 * segments begin with the same tokens. {@link #hashIds(int)} gives the prefix-chained ids of its
 * blocks: block {@code i}'s id depends on every segment piece in blocks {@code 0..i}, so equal
 * prefixes give equal ids and the ids of a partial last block differ from those of the full block
 * it later becomes.
 */
final class Prompt {
  private record Segment(long id, int length) {}

  private static final long CHAIN_SEED = 0x243F6A8885A308D3L;

  private final List<Segment> segments;
  private final int length;
  private final Prompt parent;  // the prompt this one extends; its full blocks are this one's first blocks
  private int cachedBlockSize;
  private long[] cachedFull;  // raw chain values of the full blocks, for cachedBlockSize

  private Prompt(List<Segment> segments, int length, Prompt parent) {
    this.segments = segments;
    this.length = length;
    this.parent = parent;
  }

  static Prompt empty() {
    return new Prompt(List.of(), 0, null);
  }

  /** This prompt followed by {@code tokens} tokens of segment {@code id}. */
  Prompt append(long id, int tokens) {
    if (tokens < 1) {
      throw new IllegalArgumentException("a segment needs at least one token, got " + tokens);
    }
    List<Segment> next = new ArrayList<>(segments.size() + 1);
    next.addAll(segments);
    next.add(new Segment(id, tokens));
    return new Prompt(next, Math.addExact(length, tokens), this);
  }

  int length() {
    return length;
  }

  /** The ids of every block, the last one possibly partial. */
  List<Long> hashIds(int blockSize) {
    long[] full = fullBlocks(blockSize);
    List<Long> ids = new ArrayList<>(full.length + 1);
    for (long chain : full) {
      ids.add(chain & Long.MAX_VALUE);
    }
    if (length % blockSize != 0) {
      long previous = full.length == 0 ? CHAIN_SEED : full[full.length - 1];
      ids.add(hashBlocks(blockSize, full.length, previous, null) & Long.MAX_VALUE);
    }
    return ids;
  }

  /** Chain values of the full blocks, reusing those of the prompt this one extends. */
  private synchronized long[] fullBlocks(int blockSize) {
    if (cachedFull != null && cachedBlockSize == blockSize) {
      return cachedFull;
    }
    long[] inherited = parent == null ? new long[0] : parent.fullBlocks(blockSize);
    long[] full = Arrays.copyOf(inherited, length / blockSize);
    if (inherited.length < full.length) {
      hashBlocks(blockSize, inherited.length, inherited.length == 0 ? CHAIN_SEED : inherited[inherited.length - 1], full);
    }
    cachedBlockSize = blockSize;
    cachedFull = full;
    return full;
  }

  /**
   * Hashes blocks from {@code firstBlock} on, chaining from {@code chain}: into {@code out} (full
   * blocks up to its length) or, with {@code out} null, only the one block at {@code firstBlock}.
   * Returns the last chain value.
   */
  private long hashBlocks(int blockSize, int firstBlock, long chain, long[] out) {
    int segment = 0;
    long skip = (long) firstBlock * blockSize;
    while (skip >= segments.get(segment).length()) {
      skip -= segments.get(segment).length();
      segment++;
    }
    int offset = (int) skip;  // within the segment
    int lastBlock = out == null ? firstBlock : out.length - 1;
    for (int b = firstBlock; b <= lastBlock; b++) {
      int remaining = Math.min(blockSize, length - b * blockSize);
      long block = remaining;
      while (remaining > 0) {
        Segment s = segments.get(segment);
        int take = Math.min(remaining, s.length() - offset);
        block = mix(block ^ mix(s.id() * 31 + offset) ^ take);
        offset += take;
        remaining -= take;
        if (offset == s.length()) {
          segment++;
          offset = 0;
        }
      }
      chain = mix(chain ^ block);
      if (out != null) {
        out[b] = chain;
      }
    }
    return chain;
  }

  /** SplitMix64's finalizer. */
  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }
}
