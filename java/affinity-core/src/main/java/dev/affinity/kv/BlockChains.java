package dev.affinity.kv;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongConsumer;

/**
 * A conversation's last prompt as the routers hashed it, one {@link BlockHasher.Chain} per hashing (algorithm and
 * block size): the next turn, which re-sends the history with a little more, hashes only the blocks it adds
 * ({@link BlockHasher#chain}); and each index's last walk of it, which the next walk continues
 * ({@link PrefixIndex#walk}). A sub-agent's first turn continues its parent's chains and walks until it has its own.
 * Kept with the conversation's last turn ({@code dev.affinity.admission.KeptTurns}), which counts its bytes:
 * {@code grew} is told of what each stored chain or walk adds. Thread-safe.
 */
public final class BlockChains {
  private final Map<Long, BlockHasher.Chain> chains = new ConcurrentHashMap<>();
  private final Map<WalkKey, PrefixIndex.Walk> walks = new ConcurrentHashMap<>();
  private volatile BlockChains parent;
  private final LongConsumer grew;

  /** {@code parent}: the chains a sub-agent's first turn continues (null: none). */
  public BlockChains(BlockChains parent, LongConsumer grew) {
    this.parent = parent;
    this.grew = grew;
  }

  /** The chain a prompt hashed this way continues: this conversation's last, else its parent's; null: none. */
  public BlockHasher.Chain prior(HashAlgorithm algorithm, int tokensPerBlock) {
    BlockHasher.Chain own = chains.get(BlockHasher.hashingKey(algorithm, tokensPerBlock));
    if (own != null) {
      return own;
    }
    BlockChains p = parent;
    return p == null ? null : p.prior(algorithm, tokensPerBlock);
  }

  /** The conversation's latest prompt hashed this way. */
  public void store(BlockHasher.Chain chain) {
    BlockHasher.Chain old = chains.put(BlockHasher.hashingKey(chain.algorithm(), chain.tokensPerBlock()), chain);
    parent = null;  // its own from now on
    grew.accept(chain.bytes() - (old == null ? 0 : old.bytes()));
  }

  /** An index's walks of a hashing's chain. */
  private record WalkKey(PrefixIndex index, long hashing) {}

  /**
   * The last walk of {@code index} over this conversation's prompt hashed this way ({@link PrefixIndex#walk}), else its
   * parent's; null: none.
   */
  public PrefixIndex.Walk lastWalk(PrefixIndex index, HashAlgorithm algorithm, int tokensPerBlock) {
    PrefixIndex.Walk own = walks.get(new WalkKey(index, BlockHasher.hashingKey(algorithm, tokensPerBlock)));
    if (own != null) {
      return own;
    }
    BlockChains p = parent;
    return p == null ? null : p.lastWalk(index, algorithm, tokensPerBlock);
  }

  /** The conversation's latest walk of {@code index} over its prompt hashed this way. */
  public void storeWalk(PrefixIndex index, HashAlgorithm algorithm, int tokensPerBlock, PrefixIndex.Walk walk) {
    PrefixIndex.Walk old = walks.put(new WalkKey(index, BlockHasher.hashingKey(algorithm, tokensPerBlock)), walk);
    grew.accept(walk.bytes() - (old == null ? 0 : old.bytes()));
  }

  /** What the chains and walks take. */
  public long bytes() {
    long b = 0;
    for (BlockHasher.Chain c : chains.values()) {
      b += c.bytes();
    }
    for (PrefixIndex.Walk w : walks.values()) {
      b += w.bytes();
    }
    return b;
  }
}
