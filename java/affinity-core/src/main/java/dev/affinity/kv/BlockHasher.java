package dev.affinity.kv;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Objects;

/**
 * KV block hashing bit-exact with TensorRT-LLM ({@code BlockHashMixin._compute_block_hashes} in {@code tensorrt_llm/serve/router_utils.py}; golden vectors in
 * the test resources). Router rules: the last prompt token is excluded, the rest is cut into
 * {@code tokensPerBlock} chunks, the final partial chunk is hashed too, and each block chains on its
 * parent. A cache salt is mixed into the first block (v1) or the reuse scope (v2); an empty salt is a
 * salt, distinct from none ({@code null}).
 *
 * <p>Every algorithm also yields 64-bit keys ({@link #keys}) for the prefix index: v1 and
 * v2_sha256_64 are 64-bit already; for v2_sha256 the key is the digest's first 8 bytes (big-endian),
 * so hex strings from a worker's events map to the same keys ({@link #keyOfHex}).
 */
public final class BlockHasher {
  private static final long MUL1 = 0xBF58476D1CE4E5B9L;
  private static final long MUL2 = 0x94D049BB133111EBL;

  private final HashAlgorithm algorithm;
  private final int tokensPerBlock;

  public BlockHasher(HashAlgorithm algorithm, int tokensPerBlock) {
    this.algorithm = Objects.requireNonNull(algorithm, "algorithm");
    if (tokensPerBlock <= 0) {
      throw new IllegalArgumentException("tokens per block must be > 0, got " + tokensPerBlock);
    }
    this.tokensPerBlock = tokensPerBlock;
  }

  public HashAlgorithm algorithm() {
    return algorithm;
  }

  public int tokensPerBlock() {
    return tokensPerBlock;
  }

  /** Number of block hashes of a prompt: the last token excluded, a partial final block included. */
  public int blockCount(int promptLength) {
    int usable = Math.max(0, promptLength - 1);
    return (usable + tokensPerBlock - 1) / tokensPerBlock;
  }

  /** Number of full blocks among them (only these can match a worker's cached blocks). */
  public int fullBlockCount(int promptLength) {
    return Math.max(0, promptLength - 1) / tokensPerBlock;
  }

  /** One number for a hashing (algorithm and block size): what per-hashing results are kept under. */
  public static long hashingKey(HashAlgorithm algorithm, int tokensPerBlock) {
    return ((long) algorithm.ordinal() << 32) | tokensPerBlock;
  }

  /** 64-bit keys of the prompt's blocks (see the class comment). */
  public long[] keys(int[] tokens, String cacheSalt) {
    return chain(tokens, cacheSalt, null).keys();
  }

  /**
   * A prompt's blocks as hashed: their 64-bit keys and, for v2, their digests (what the next block chains on). What a
   * later prompt that shares its leading tokens continues ({@link #chain}). Never modified after it is made.
   */
  public record Chain(HashAlgorithm algorithm, int tokensPerBlock, int[] tokens, String cacheSalt, long[] keys,
      byte[][] digests) {
    /** What it takes in memory, about: its keys, and its digests (32 bytes and an array's header each). */
    public long bytes() {
      return 64 + 8L * keys.length + (digests == null ? 0 : 56L * digests.length);
    }
  }

  /**
   * The prompt's block chain ({@link #keys}), continuing {@code prior} (a chain this hasher made, or null): the full
   * blocks that lie within the tokens the two prompts share, under the same salt, are {@code prior}'s, and only the
   * rest is hashed. The result is {@link #keys}' exactly: a block's hash is a function of its tokens and its parent's.
   */
  public Chain chain(int[] tokens, String cacheSalt, Chain prior) {
    int reused = reusable(tokens, cacheSalt, prior);
    return switch (algorithm) {
      case V1_BLOCK_KEY -> new Chain(algorithm, tokensPerBlock, tokens, cacheSalt,
          v1Chain(tokens, cacheSalt, prior, reused), null);
      case V2_SHA256, V2_SHA256_64 -> {
        byte[][] digests = sha256Chain(tokens, cacheSalt, prior, reused);
        long[] out = new long[digests.length];
        if (reused > 0) {
          System.arraycopy(prior.keys(), 0, out, 0, reused);
        }
        for (int i = reused; i < digests.length; i++) {
          out[i] = first8(digests[i]);
        }
        yield new Chain(algorithm, tokensPerBlock, tokens, cacheSalt, out, digests);
      }
    };
  }

  /** How many of {@code prior}'s leading blocks {@code tokens} has too: full in both, within their shared tokens. */
  private int reusable(int[] tokens, String cacheSalt, Chain prior) {
    if (prior == null || prior.algorithm() != algorithm || prior.tokensPerBlock() != tokensPerBlock
        || !Objects.equals(prior.cacheSalt(), cacheSalt)) {
      return 0;
    }
    int shared = java.util.Arrays.mismatch(prior.tokens(), tokens);
    if (shared < 0) {
      shared = tokens.length;  // the same tokens
    }
    // a block is full when it ends within the hashed tokens (the last token is never hashed), in both prompts
    int end = Math.min(shared, Math.min(prior.tokens().length, tokens.length) - 1);
    return Math.max(0, Math.min(end / tokensPerBlock, prior.keys().length));
  }

  /** The hashes as TensorRT-LLM reports them: unsigned decimal (v1, v2_sha256_64) or lowercase hex (v2_sha256). */
  public String[] wireHashes(int[] tokens, String cacheSalt) {
    if (algorithm == HashAlgorithm.V2_SHA256) {
      byte[][] digests = sha256Chain(tokens, cacheSalt);
      String[] out = new String[digests.length];
      for (int i = 0; i < digests.length; i++) {
        out[i] = java.util.HexFormat.of().formatHex(digests[i]);
      }
      return out;
    }
    long[] keys = keys(tokens, cacheSalt);
    String[] out = new String[keys.length];
    for (int i = 0; i < keys.length; i++) {
      out[i] = Long.toUnsignedString(keys[i]);
    }
    return out;
  }

  /** The index key of a v2_sha256 hex hash (its first 8 bytes, big-endian). */
  public static long keyOfHex(String hex) {
    if (hex.length() < 16) {
      throw new IllegalArgumentException("expected a SHA-256 hex digest, found \"" + hex + "\"");
    }
    return Long.parseUnsignedLong(hex.substring(0, 16), 16);
  }

  // -------------------------------------------------------------------------------------------
  // v1

  private long[] v1Chain(int[] tokens, String cacheSalt, Chain prior, int reused) {
    int n = blockCount(tokens.length);
    long[] out = new long[n];
    int usable = tokens.length - 1;
    long parent = 0;
    if (reused > 0) {
      System.arraycopy(prior.keys(), 0, out, 0, reused);
      parent = out[reused - 1];
    }
    Long salt = cacheSalt == null ? null : cacheSaltId(cacheSalt);
    for (int b = reused; b < n; b++) {
      int from = b * tokensPerBlock;
      int len = Math.min(tokensPerBlock, usable - from);
      parent = hashV1BlockKey(tokens, from, len, parent, null, b == 0 ? salt : null);
      out[b] = parent;
    }
    return out;
  }

  /** {@code hash_v1_block_key(tokens[from:from+len], parent_hash, lora_task_id, cache_salt_id)}. */
  public static long hashV1BlockKey(int[] tokens, int from, int len, long parentHash, Long loraTaskId, Long cacheSaltId) {
    long seed = ((long) len) ^ (parentHash * MUL1);
    if (parentHash == 0 && cacheSaltId != null) {
      seed = mix64(cacheSaltId, seed);
    }
    for (int i = from; i < from + len; i++) {
      seed = mix32(tokens[i], seed);
    }
    if (loraTaskId != null) {
      seed = mix64(loraTaskId, seed);
    }
    return seed;
  }

  private static long mix32(int token, long seed) {
    int v = token;
    v = ((v >>> 16) ^ v) * 0x45D9F3B;
    v = ((v >>> 16) ^ v) * 0x45D9F3B;
    v = (v >>> 16) ^ v;
    v = v + 0x9E3779B9;  // wraps at 32 bits, as in C++
    long vu = Integer.toUnsignedLong(v);
    return seed ^ (vu + (seed << 6) + (seed >>> 2));
  }

  private static long mix64(long v, long seed) {
    v = (v ^ (v >>> 30)) * MUL1;
    v = (v ^ (v >>> 27)) * MUL2;
    v ^= v >>> 31;
    return seed ^ (v + 0x9E3779B9L + (seed << 6) + (seed >>> 2));
  }

  /** u64 little-endian of the first 8 bytes of SHA-256(salt as UTF-8). */
  public static long cacheSaltId(String salt) {
    byte[] d = sha256().digest(salt.getBytes(StandardCharsets.UTF_8));
    long v = 0;
    for (int i = 7; i >= 0; i--) {
      v = (v << 8) | (d[i] & 0xFF);
    }
    return v;
  }

  // -------------------------------------------------------------------------------------------
  // v2

  private byte[][] sha256Chain(int[] tokens, String cacheSalt) {
    return sha256Chain(tokens, cacheSalt, null, 0);
  }

  private byte[][] sha256Chain(int[] tokens, String cacheSalt, Chain prior, int reused) {
    MessageDigest md = sha256();
    int n = blockCount(tokens.length);
    byte[][] out = new byte[n][];
    byte[] key;
    if (reused > 0) {
      System.arraycopy(prior.digests(), 0, out, 0, reused);
      key = out[reused - 1];
    } else {
      key = md.digest(scope(cacheSalt));
    }
    int usable = tokens.length - 1;
    byte[] buf = new byte[tokensPerBlock * 4];
    for (int b = reused; b < n; b++) {
      int from = b * tokensPerBlock;
      int len = Math.min(tokensPerBlock, usable - from);
      for (int i = 0; i < len; i++) {
        int t = tokens[from + i];
        buf[4 * i] = (byte) t;
        buf[4 * i + 1] = (byte) (t >>> 8);
        buf[4 * i + 2] = (byte) (t >>> 16);
        buf[4 * i + 3] = (byte) (t >>> 24);
      }
      md.update(key);
      md.update(buf, 0, 4 * len);
      key = md.digest();
      out[b] = key;
    }
    return out;
  }

  /** v2's reuse scope: a LoRA id (none here) and the cache salt's id. */
  private static byte[] scope(String cacheSalt) {
    if (cacheSalt == null) {
      return new byte[] {0};
    }
    long salt = cacheSaltId(cacheSalt);
    byte[] scope = new byte[9];
    scope[0] = 2;  // bit 1: salt present (bit 0 would be a LoRA id; the router passes none)
    for (int i = 0; i < 8; i++) {
      scope[1 + i] = (byte) (salt >>> (8 * i));
    }
    return scope;
  }

  private static long first8(byte[] d) {
    long v = 0;
    for (int i = 0; i < 8; i++) {
      v = (v << 8) | (d[i] & 0xFF);
    }
    return v;
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK lacks SHA-256", e);
    }
  }
}
