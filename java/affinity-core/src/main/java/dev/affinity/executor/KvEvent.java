package dev.affinity.executor;

import java.util.Arrays;
import java.util.Objects;

/**
 * One KV-cache event of one attention-DP rank. Block hashes are unsigned 64-bit values held in
 * {@code long}s (print them with {@link Long#toUnsignedString(long)}).
 *
 * <ul>
 *   <li>{@code CREATED}: {@code value} = blocks in the (single) cache level.
 *   <li>{@code STORED}: {@code blockHashes} form one chain; {@code parentHash} is the hash of the
 *       block before the first one ({@code hasParent == false} for a chain that starts at the root);
 *       {@code tokens} holds tokensPerBlock tokens per block when the executor includes them.
 *   <li>{@code REMOVED}: {@code blockHashes} left the cache (a chain's suffix listed before its prefix).
 *   <li>{@code UPDATED}: the priority of {@code blockHashes[0]} changed to {@code value}.
 * </ul>
 */
public record KvEvent(
    long eventId,
    KvEventType type,
    int rank,
    int windowSize,
    boolean hasParent,
    long parentHash,
    long[] blockHashes,
    int[] tokens,
    long value,
    int cacheLevel) {

  public KvEvent {
    Objects.requireNonNull(type, "type");
    blockHashes = blockHashes == null ? new long[0] : blockHashes;
    tokens = tokens == null ? new int[0] : tokens;
  }

  @Override
  public long[] blockHashes() {
    return blockHashes.clone();
  }

  @Override
  public int[] tokens() {
    return tokens.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof KvEvent e
        && e.eventId == eventId
        && e.type == type
        && e.rank == rank
        && e.windowSize == windowSize
        && e.hasParent == hasParent
        && e.parentHash == parentHash
        && Arrays.equals(e.blockHashes, blockHashes)
        && Arrays.equals(e.tokens, tokens)
        && e.value == value
        && e.cacheLevel == cacheLevel;
  }

  @Override
  public int hashCode() {
    return Objects.hash(eventId, type, rank, parentHash, Arrays.hashCode(blockHashes));
  }

  @Override
  public String toString() {
    StringBuilder hashes = new StringBuilder("[");
    for (int i = 0; i < blockHashes.length; i++) {
      hashes.append(i == 0 ? "" : ", ").append(Long.toUnsignedString(blockHashes[i]));
    }
    return "KvEvent[id=" + eventId + ", " + type.wireName() + ", rank=" + rank
        + (hasParent ? ", parent=" + Long.toUnsignedString(parentHash) : "") + ", blocks=" + hashes.append(']')
        + (type == KvEventType.CREATED || type == KvEventType.UPDATED ? ", value=" + value : "") + "]";
  }
}
