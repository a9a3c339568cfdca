package dev.affinity.server.http;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.List;
import java.util.Locale;

/**
 * Checks {@code Authorization: Bearer <key>} (or, on the Anthropic endpoints, {@code x-api-key: <key>}) against the
 * configured keys. Every key is compared in
 * constant time, so the answer's timing does not tell how much of a guess was right.
 */
final class ApiKeys {
  private static final String BEARER = "bearer";
  /** The header the Anthropic SDKs send the key in. */
  static final String X_API_KEY = "x-api-key";

  /** Why a request is refused, or null when it may pass. */
  record Refusal(String message) {}

  private final List<byte[]> keys;

  ApiKeys(List<String> keys) {
    this.keys = keys.stream().map(k -> k.getBytes(StandardCharsets.UTF_8)).toList();
  }

  boolean enabled() {
    return !keys.isEmpty();
  }

  /** Null when {@code authorization} (the header value, or null) carries an accepted key. */
  Refusal check(String authorization) {
    if (keys.isEmpty()) {
      return null;
    }
    if (authorization == null || authorization.isBlank()) {
      return new Refusal("missing API key: send the header 'Authorization: Bearer <key>'");
    }
    String value = authorization.strip();
    int space = value.indexOf(' ');
    String scheme = space < 0 ? value : value.substring(0, space);
    if (!scheme.toLowerCase(Locale.ROOT).equals(BEARER)) {
      return new Refusal("the Authorization header must use the Bearer scheme: 'Authorization: Bearer <key>'");
    }
    String key = space < 0 ? "" : value.substring(space + 1).strip();
    if (key.isEmpty()) {
      return new Refusal("missing API key: send the header 'Authorization: Bearer <key>'");
    }
    return matches(key);
  }

  /** Null when {@code key} (an {@code x-api-key} value) is accepted. */
  Refusal checkKey(String key) {
    if (keys.isEmpty()) {
      return null;
    }
    if (key == null || key.isBlank()) {
      return new Refusal("missing API key: send 'x-api-key: <key>' or 'Authorization: Bearer <key>'");
    }
    return matches(key.strip());
  }

  private Refusal matches(String key) {
    byte[] given = key.getBytes(StandardCharsets.UTF_8);
    boolean ok = false;
    for (byte[] accepted : keys) {
      ok |= MessageDigest.isEqual(accepted, given);
    }
    return ok ? null : new Refusal("invalid API key");
  }
}
