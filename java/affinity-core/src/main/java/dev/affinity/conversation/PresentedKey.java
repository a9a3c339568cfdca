package dev.affinity.conversation;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;

/**
 * The API key a request presents, read by one rule on every endpoint: {@code Authorization: Bearer <key>}
 * (OpenAI's clients) or {@code x-api-key: <key>} (Anthropic's SDKs and Claude Code). The frontend authenticates
 * this key and, under tenant isolation, derives the tenant from the same key, so no header can authenticate as
 * one key and be scoped as another. A request that carries both headers must carry the same key in both.
 *
 * @param key the key (stripped), or null when the request presents none or an unusable one
 * @param problem why the headers do not present a key (a client-facing sentence), or null when {@code key} is set
 */
public record PresentedKey(String key, String problem) {
  public static final String AUTHORIZATION = "authorization";
  public static final String X_API_KEY = "x-api-key";
  private static final String MISSING =
      "missing API key: send 'Authorization: Bearer <key>' or 'x-api-key: <key>'";

  /** The key {@code headers} present. */
  public static PresentedKey of(HeaderSource headers) {
    String authorization = headers.first(AUTHORIZATION);
    String apiKey = headers.first(X_API_KEY);
    String bearer = null;
    if (authorization != null && !authorization.isBlank()) {
      String value = authorization.strip();
      int space = value.indexOf(' ');
      String scheme = space < 0 ? value : value.substring(0, space);
      if (!scheme.toLowerCase(Locale.ROOT).equals("bearer")) {
        return refused("the Authorization header must use the Bearer scheme: 'Authorization: Bearer <key>'");
      }
      bearer = space < 0 ? "" : value.substring(space + 1).strip();
      if (bearer.isEmpty()) {
        return refused(MISSING);
      }
    }
    String other = apiKey == null ? null : apiKey.strip();
    if (other != null && other.isEmpty()) {
      return refused(MISSING);
    }
    if (bearer != null && other != null && !MessageDigest.isEqual(bytes(bearer), bytes(other))) {
      return refused("the Authorization and x-api-key headers carry different keys: send one key");
    }
    String key = bearer != null ? bearer : other;
    return key == null ? refused(MISSING) : new PresentedKey(key, null);
  }

  /**
   * The tenant of a request under tenant isolation: {@code t-} and the first 16 hex digits of the SHA-256 of
   * its presented key (the key itself never becomes an id, a log line or a salt), or {@code anonymous}
   * without one (a frontend with API keys never admits such a request).
   */
  public String tenant() {
    if (key == null) {
      return "anonymous";
    }
    try {
      byte[] d = MessageDigest.getInstance("SHA-256").digest(bytes(key));
      return "t-" + HexFormat.of().formatHex(d, 0, 8);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is not available", e);
    }
  }

  private static PresentedKey refused(String problem) {
    return new PresentedKey(null, problem);
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
