package dev.affinity.executor;

/** KV-cache event kinds, as in TensorRT-LLM's {@code /kv_cache_events}. */
public enum KvEventType {
  CREATED,
  STORED,
  REMOVED,
  UPDATED;

  public static KvEventType fromCode(int code) {
    KvEventType[] all = values();
    if (code < 0 || code >= all.length) {
      throw new IllegalArgumentException("unknown KV event type code " + code);
    }
    return all[code];
  }

  /** The name TensorRT-LLM uses in the event's {@code data.type}. */
  public String wireName() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }
}
