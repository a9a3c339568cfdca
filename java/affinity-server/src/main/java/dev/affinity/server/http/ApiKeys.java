package dev.affinity.server.http;

import dev.affinity.conversation.PresentedKey;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.List;

/**
 * Checks the key a request presents ({@link PresentedKey}: {@code Authorization: Bearer <key>} or
 * {@code x-api-key: <key>}, on every endpoint) against the configured keys. Tenant isolation derives the
 * tenant from the same {@link PresentedKey}, so what authenticates a request is what scopes it. Every key is
 * compared in constant time, so the answer's timing does not tell how much of a guess was right.
 */
final class ApiKeys {
  /** Why a request is refused, or null when it may pass. */
  record Refusal(String message) {}

  private final List<byte[]> keys;

  ApiKeys(List<String> keys) {
    this.keys = keys.stream().map(k -> k.getBytes(StandardCharsets.UTF_8)).toList();
  }

  boolean enabled() {
    return !keys.isEmpty();
  }

  /** Null when the key {@code presented} is accepted (always, without configured keys). */
  Refusal check(PresentedKey presented) {
    if (keys.isEmpty()) {
      return null;
    }
    if (presented.key() == null) {
      return new Refusal(presented.problem());
    }
    byte[] given = presented.key().getBytes(StandardCharsets.UTF_8);
    boolean ok = false;
    for (byte[] accepted : keys) {
      ok |= MessageDigest.isEqual(accepted, given);
    }
    return ok ? null : new Refusal("invalid API key");
  }
}
