package dev.affinity.kv;

import java.util.Locale;

/** TensorRT-LLM's KV block-hash algorithms ({@code /server_info.kv_cache_hash_algo}). */
public enum HashAlgorithm {
  /** The v1 block key (64-bit), the default. */
  V1_BLOCK_KEY("v1_block_key"),
  /** SHA-256 chain keys, reported as lowercase hex. */
  V2_SHA256("v2_sha256"),
  /** The same SHA-256 keys, reported as their first 8 bytes read big-endian (unsigned). */
  V2_SHA256_64("v2_sha256_64");

  private final String wireName;

  HashAlgorithm(String wireName) {
    this.wireName = wireName;
  }

  public String wireName() {
    return wireName;
  }

  /** Parses the wire name; throws IllegalArgumentException listing the known names. */
  public static HashAlgorithm fromWireName(String name) {
    for (HashAlgorithm a : values()) {
      if (a.wireName.equals(name == null ? "" : name.strip().toLowerCase(Locale.ROOT))) {
        return a;
      }
    }
    throw new IllegalArgumentException("unknown KV cache hash algorithm \"" + name
        + "\" (known: v1_block_key, v2_sha256, v2_sha256_64)");
  }
}
