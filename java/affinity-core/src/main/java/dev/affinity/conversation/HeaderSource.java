package dev.affinity.conversation;

import java.util.Locale;
import java.util.Map;

/** Read access to request headers by name, case-insensitively; the first value when repeated. */
@FunctionalInterface
public interface HeaderSource {
  /** The first value of the header, or null. {@code name} is lower case. */
  String first(String lowerCaseName);

  HeaderSource NONE = name -> null;

  /** Headers from a map whose keys may be in any case (tests, embedding). */
  static HeaderSource of(Map<String, String> headers) {
    Map<String, String> lower = new java.util.HashMap<>();
    headers.forEach((k, v) -> lower.putIfAbsent(k.toLowerCase(Locale.ROOT), v));
    return lower::get;
  }
}
