package dev.affinity.routing;

import java.util.LinkedHashMap;
import java.util.Map;

/** An access-ordered map that drops its least recently used entry beyond a capacity. Not thread-safe. */
final class LruMap<K, V> extends LinkedHashMap<K, V> {
  private static final long serialVersionUID = 1L;
  private final long capacity;

  LruMap(long capacity) {
    super(16, 0.75f, true);
    this.capacity = capacity;
  }

  @Override
  protected boolean removeEldestEntry(Map.Entry<K, V> eldest) {
    return size() > capacity;
  }
}
