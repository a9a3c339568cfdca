package dev.affinity.protocol;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The unmodelled fields of a record being built. A builder taken from a record holds that record's frozen fields as
 * they are and copies them only when one is set or removed, so deriving a leg's body from a request copies nothing
 * of what the client sent beside the modelled fields. The record's constructor freezes what it gets.
 */
abstract class ExtraFieldsBuilder<B extends ExtraFieldsBuilder<B>> {
  private Map<String, JsonNode> extra = Map.of();
  private boolean writable;

  /** This builder as its own type, for chained calls ({@code B} is always the class itself). */
  @SuppressWarnings("unchecked")
  final B self() {
    return (B) this;
  }

  /** Sets an unmodelled field (a field newer than this code, say); a modelled name is rejected when built. */
  public B putExtra(String name, JsonNode value) {
    writable().put(Objects.requireNonNull(name, "name"), value);
    return self();
  }

  public B removeExtra(String name) {
    if (extra.containsKey(name)) {
      writable().remove(name);
    }
    return self();
  }

  /**
   * Every unmodelled field of {@code fields}, in their order. Only for a record's own fields, frozen already: they
   * are held by reference until a change copies them.
   */
  B extraFrom(Map<String, JsonNode> fields) {
    if (extra.isEmpty() && !writable) {
      extra = fields;
    } else {
      writable().putAll(fields);
    }
    return self();
  }

  /** What the record is built with. */
  final Map<String, JsonNode> extra() {
    return extra;
  }

  private Map<String, JsonNode> writable() {
    if (!writable) {
      extra = new LinkedHashMap<>(extra);
      writable = true;
    }
    return extra;
  }
}
