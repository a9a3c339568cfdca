package dev.affinity.protocol;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;

/**
 * The unmodelled fields of a wire record, frozen: an unmodifiable map, in the order the fields came, that hands out a
 * deep copy of a value each time one is read ({@link #get}, its entries, its values), so that no caller can change
 * the record through it. A JSON scalar is immutable and is its own copy, so reading the usual extras (sampling knobs,
 * flags, ids) costs nothing; objects and arrays are copied. It is the record component itself, read by Jackson as
 * the record's any-getter, so the records need no copying accessor of their own.
 */
final class FrozenFields extends AbstractMap<String, JsonNode> {
  private final Map<String, JsonNode> fields;

  /** Takes {@code fields} as it is: the caller hands over a map no one else holds, of values copied already. */
  FrozenFields(LinkedHashMap<String, JsonNode> fields) {
    this.fields = fields;
  }

  @Override
  public int size() {
    return fields.size();
  }

  @Override
  public boolean containsKey(Object key) {
    return fields.containsKey(key);
  }

  @Override
  public JsonNode get(Object key) {
    JsonNode v = fields.get(key);
    return v == null ? null : v.deepCopy();
  }

  /** Unmodifiable, as {@code put}: even for a key that is not there. */
  @Override
  public JsonNode remove(Object key) {
    throw new UnsupportedOperationException("unmodelled fields are frozen");
  }

  @Override
  public void clear() {
    throw new UnsupportedOperationException("unmodelled fields are frozen");
  }

  @Override
  public Set<String> keySet() {
    return Collections.unmodifiableSet(fields.keySet());
  }

  @Override
  public void forEach(BiConsumer<? super String, ? super JsonNode> action) {
    fields.forEach((k, v) -> action.accept(k, v.deepCopy()));
  }

  @Override
  public Set<Entry<String, JsonNode>> entrySet() {
    return new AbstractSet<>() {
      @Override
      public Iterator<Entry<String, JsonNode>> iterator() {
        Iterator<Entry<String, JsonNode>> it = fields.entrySet().iterator();
        return new Iterator<>() {
          @Override
          public boolean hasNext() {
            return it.hasNext();
          }

          @Override
          public Entry<String, JsonNode> next() {
            Entry<String, JsonNode> e = it.next();
            return Map.entry(e.getKey(), e.getValue().deepCopy());
          }
        };
      }

      @Override
      public int size() {
        return fields.size();
      }
    };
  }
}
