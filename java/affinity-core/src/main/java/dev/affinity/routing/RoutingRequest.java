package dev.affinity.routing;

import dev.affinity.kv.BlockHasher;
import dev.affinity.kv.HashAlgorithm;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What a router sees of one request leg: its ids, routing key and the prompt (token ids when known,
 * else its text length). Block keys are computed once per (algorithm, block size) and cached, off
 * the routers' locks.
 */
public final class RoutingRequest {
  private final long requestId;
  private final Fleet fleet;
  private final String routingKey;
  private final String conversationId;
  private final String affinityId;
  private final int[] tokens;
  private final int numTokens;
  private final int textLength;
  /** kv_cache_aware's content key, computed when a router asks (a hash of the first two messages' text); or null. */
  private final java.util.function.Supplier<Long> contentKey;
  private final String cacheSalt;
  private final int maxNewTokens;
  private final String text;
  private final Map<Long, long[]> keysByHasher = new ConcurrentHashMap<>();
  private final dev.affinity.kv.BlockChains blockChains;

  private RoutingRequest(Builder b) {
    this.requestId = b.requestId;
    this.fleet = b.fleet;
    this.routingKey = b.routingKey;
    this.conversationId = b.conversationId;
    this.affinityId = b.affinityId;
    this.tokens = b.tokens;
    this.textLength = b.text != null ? b.text.length() : b.textLength;
    int chars = b.text != null ? b.text.length() : b.textLength;
    this.numTokens = b.tokens != null ? b.tokens.length : Math.max(1, chars / 4);
    this.contentKey = b.contentKey;
    this.cacheSalt = b.cacheSalt;
    this.maxNewTokens = b.maxNewTokens;
    this.text = b.text;
    this.blockChains = b.blockChains;
  }

  public static Builder builder(long requestId, Fleet fleet) {
    return new Builder(requestId, fleet);
  }

  /** The disaggregated request id (context) or context request id (generation). */
  public long requestId() {
    return requestId;
  }

  public Fleet fleet() {
    return fleet;
  }

  /** The fleet's routing key from conversation resolution (null: no id, content-based routing). */
  public String routingKey() {
    return routingKey;
  }

  public String conversationId() {
    return conversationId;
  }

  public String affinityId() {
    return affinityId;
  }

  /** Prompt token ids, or null when the router must work from text. */
  public int[] tokens() {
    return tokens;
  }

  public boolean hasTokens() {
    return tokens != null;
  }

  /** Prompt length in tokens (estimated as text length / 4 without token ids). */
  public int numTokens() {
    return numTokens;
  }

  /** Prompt text length in characters (0 when only tokens are known). */
  public int textLength() {
    return textLength;
  }

  /**
   * kv_cache_aware's content-affinity key (chat requests), or null; computed when asked, since only that router reads
   * it and it hashes the first two messages' text (an agent's system prompt: tens of kilobytes a turn). The builder's
   * source decides how often: the flow's computes it once per request body (LegInputs).
   */
  public Long contentKey() {
    return contentKey == null ? null : contentKey.get();
  }

  public String cacheSalt() {
    return cacheSalt;
  }

  public int maxNewTokens() {
    return maxNewTokens;
  }

  /**
   * The prompt as text ("role:content" lines for chat), when the frontend has it and no token ids:
   * the conversation router's implicit matching then hashes its code points. May be null.
   */
  public String text() {
    return text;
  }

  /**
   * Block keys of the prompt for a worker's hashing; empty without token ids. With its conversation's
   * {@link dev.affinity.kv.BlockChains}, only the blocks the last turn's chain does not share are hashed, and this
   * prompt's chain becomes the conversation's.
   */
  public long[] blockKeys(HashAlgorithm algorithm, int tokensPerBlock) {
    if (tokens == null) {
      return new long[0];
    }
    return keysByHasher.computeIfAbsent(BlockHasher.hashingKey(algorithm, tokensPerBlock), k -> {
      BlockHasher hasher = new BlockHasher(algorithm, tokensPerBlock);
      if (blockChains == null) {
        return hasher.keys(tokens, cacheSalt);
      }
      BlockHasher.Chain chain = hasher.chain(tokens, cacheSalt, blockChains.prior(algorithm, tokensPerBlock));
      blockChains.store(chain);
      return chain.keys();
    });
  }

  /**
   * How many leading blocks of the prompt (hashed this way) each of {@code locations} holds in {@code index}
   * ({@link dev.affinity.kv.PrefixIndex#matchDepths}); with its conversation's {@link dev.affinity.kv.BlockChains}, the
   * walk continues the conversation's last walk of that index and becomes its last ({@link dev.affinity.kv.PrefixIndex#walk}).
   */
  public int[] matchDepths(dev.affinity.kv.PrefixIndex index, HashAlgorithm algorithm, int tokensPerBlock,
      int[] locations) {
    if (blockChains == null) {
      return index.matchDepths(blockKeys(algorithm, tokensPerBlock), locations);
    }
    // before the keys: storing this prompt's chain makes the conversation's own, and a sub-agent's first turn
    // continues its parent's walk
    dev.affinity.kv.PrefixIndex.Walk last = blockChains.lastWalk(index, algorithm, tokensPerBlock);
    long[] keys = blockKeys(algorithm, tokensPerBlock);
    if (keys.length == 0) {
      return new int[locations.length];
    }
    dev.affinity.kv.PrefixIndex.Walk walk = index.walk(keys, locations, last);
    blockChains.storeWalk(index, algorithm, tokensPerBlock, walk);
    return walk.depths();
  }

  @Override
  public String toString() {
    return "RoutingRequest[" + requestId + ", " + fleet + ", key=" + routingKey + ", tokens=" + numTokens + "]";
  }

  /** Builder; only the id and fleet are required. */
  public static final class Builder {
    private final long requestId;
    private final Fleet fleet;
    private String routingKey;
    private String conversationId;
    private String affinityId;
    private int[] tokens;
    private int textLength;
    private java.util.function.Supplier<Long> contentKey;
    private String cacheSalt;
    private int maxNewTokens = 1;
    private String text;
    private dev.affinity.kv.BlockChains blockChains;

    private Builder(long requestId, Fleet fleet) {
      this.requestId = requestId;
      this.fleet = Objects.requireNonNull(fleet, "fleet");
    }

    public Builder routingKey(String v) {
      routingKey = v;
      return this;
    }

    public Builder conversationId(String v) {
      conversationId = v;
      return this;
    }

    public Builder affinityId(String v) {
      affinityId = v;
      return this;
    }

    public Builder tokens(int[] v) {
      tokens = v;
      return this;
    }

    public Builder textLength(int v) {
      textLength = v;
      return this;
    }

    public Builder contentKey(Long v) {
      contentKey = v == null ? null : () -> v;
      return this;
    }

    /** The content key, computed by {@code v} each time a router asks for it ({@link #contentKey()}). */
    public Builder contentKey(java.util.function.Supplier<Long> v) {
      contentKey = v;
      return this;
    }

    public Builder cacheSalt(String v) {
      cacheSalt = v;
      return this;
    }

    public Builder maxNewTokens(int v) {
      maxNewTokens = Math.max(1, v);
      return this;
    }

    public Builder text(String v) {
      text = v;
      return this;
    }

    /** The conversation's last prompt as hashed, which {@link #blockKeys} continues and replaces (null: none). */
    public Builder blockChains(dev.affinity.kv.BlockChains v) {
      blockChains = v;
      return this;
    }

    public RoutingRequest build() {
      return new RoutingRequest(this);
    }
  }
}
