package dev.affinity.server.cluster;

import dev.affinity.conversation.HeaderSource;
import dev.affinity.protocol.InternalAuth;
import dev.affinity.server.worker.LegAuth;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Authentication of the HTTP cluster storage ({@code /set}, {@code /get}, {@code /get_prefix}, {@code /delete},
 * {@code /expire}) with the shared {@code internal_request_auth_key}, as every leg is signed ({@link LegAuth}: the
 * header {@value LegAuth#HEADER}, HMAC-SHA256 over the method, the request target, the SHA-256 of the body, a
 * timestamp and a nonce used once). The signed target is the path and the query in one canonical form (names
 * sorted, each value percent-encoded, several values kept in order), so the key a {@code GET /get?key=...}
 * reads is covered as the body of a {@code POST /set} is; the claim's worker field is {@value #AUDIENCE}, so a
 * storage signature never passes as a leg's or the other way round.
 */
public final class StorageAuth {
  /** The claim's {@code worker} field for storage requests. */
  public static final String AUDIENCE = "cluster-storage";

  private StorageAuth() {}

  /** {@code path?a=1&b=2} with names sorted and values percent-encoded (UTF-8); {@code path} alone without a query. */
  public static String target(String path, Map<String, List<String>> query) {
    StringBuilder sb = new StringBuilder(path);
    char sep = '?';
    for (Map.Entry<String, List<String>> e : new TreeMap<>(query).entrySet()) {
      for (String v : e.getValue()) {
        sb.append(sep).append(encode(e.getKey())).append('=').append(encode(v));
        sep = '&';
      }
    }
    return sb.toString();
  }

  private static String encode(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  /** Signs a worker's storage requests. Thread-safe. */
  public static final class Signer {
    private final LegAuth.Signer signer;

    public Signer(InternalAuth auth, Clock clock) {
      this.signer = new LegAuth.Signer(auth, clock);
    }

    /** The {@value LegAuth#HEADER} value for one request. */
    public String sign(String method, String path, Map<String, List<String>> query, byte[] body) {
      return signer.sign(method, target(path, query), body, null, null, AUDIENCE);
    }
  }

  /** Checks storage requests on the frontend: signature, timestamp window, each nonce once. Thread-safe. */
  public static final class Verifier {
    private final LegAuth.Verifier verifier;

    public Verifier(InternalAuth auth, Clock clock, Duration window) {
      this.verifier = new LegAuth.Verifier(auth, AUDIENCE, clock, window);
    }

    /** Why the request is refused (401), or null when it is authentic and new. */
    public String refusal(String method, String path, Map<String, List<String>> query, HeaderSource headers,
        byte[] body) {
      String why = verifier.refusal(method, target(path, query), headers, body);
      return why == null ? null : "the cluster storage needs requests signed with internal_request_auth_key: " + why;
    }
  }
}
