package dev.affinity.server.worker;

import dev.affinity.conversation.HeaderSource;
import dev.affinity.protocol.InternalAuth;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.PriorityQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;

/**
 * Affinity's own authentication of every request an Affinity frontend sends to a worker, on top of
 * upstream's {@code x-trtllm-disagg-auth} and sub-agent affinity signatures (which stay byte-identical and
 * are still sent and checked): the header {@value #HEADER} with the value
 * {@code t=<unix ms>,n=<nonce>,sha256=<hex HMAC-SHA256>}, keyed by the shared
 * {@code internal_request_auth_key}, over the canonical JSON ({@link InternalAuth#canonicalJson}, the one
 * canonicalization) of the {@link Claim}: the method, the endpoint path, the SHA-256 of the exact body
 * bytes (so every field that steers the leg — request ids, prompt or prompt token ids, first generated
 * tokens, context phase params, conversation params, sampling — is covered, and nothing in the body can be
 * altered), the rank hint, sub-agent affinity id, KV retention and cache salt headers as sent, the worker's name (from its
 * {@code /server_info}; null for a worker that reports none), the timestamp and the nonce.
 *
 * <p>A {@link Verifier} (an Affinity worker process with a key) checks it on the raw request, before the
 * body is decoded, parsed or validated: the signature, the timestamp within {@code ±window} of its clock,
 * and the nonce not seen before (each nonce is remembered until its timestamp leaves the window, so a
 * signed request is accepted once). A {@link Signer} (the frontend's {@link HttpWorker}) signs each write
 * of a request with a fresh nonce.
 */
public final class LegAuth {
  /** The request header. */
  public static final String HEADER = "x-affinity-leg-auth";
  /** The value of {@code purpose} in the claim, so that a signature of one kind never passes as another. */
  public static final String PURPOSE = HEADER;
  /** How far a request's timestamp may be from the worker's clock, either way, by default. */
  public static final Duration DEFAULT_WINDOW = Duration.ofSeconds(60);
  /** The most nonces a verifier remembers at once; beyond it, signed requests are refused (401) until some expire. */
  public static final int MAX_REMEMBERED = 1 << 20;

  private static final Pattern NONCE = Pattern.compile("[A-Za-z0-9_-]{8,64}");
  private static final Pattern TIMESTAMP = Pattern.compile("[0-9]{1,18}");
  private static final byte[] EMPTY = new byte[0];

  private LegAuth() {}

  /**
   * What one signature covers.
   *
   * @param method the HTTP method, upper case
   * @param path the endpoint path ({@code /v1/completions}, {@code /kv_cache_events}), without a base path or query
   * @param bodySha256 lower-case hex SHA-256 of the body bytes as sent (of nothing for no body)
   * @param rankHint the {@value WorkerExtensions#RANK_HINT_HEADER} value as sent, or null
   * @param subagentAffinityId the {@value InternalAuth#SUBAGENT_AFFINITY_HEADER} value as sent, or null
   * @param kvRetention the {@value WorkerExtensions#KV_RETENTION_HEADER} value as sent, or null
   * @param cacheSalt the {@value WorkerExtensions#CACHE_SALT_HEADER} value as sent, or null
   * @param worker the worker's name as its {@code /server_info} reports it, or null
   * @param timestampMillis when the request was signed, Unix milliseconds
   * @param nonce unique per signed request
   */
  public record Claim(String method, String path, String bodySha256, String rankHint, String subagentAffinityId,
      String kvRetention, String cacheSalt, String worker, long timestampMillis, String nonce) {
    public Claim {
      Objects.requireNonNull(method, "method");
      Objects.requireNonNull(path, "path");
      Objects.requireNonNull(bodySha256, "bodySha256");
      Objects.requireNonNull(nonce, "nonce");
    }

    /** A claim of a request without a KV retention or cache salt header. */
    public Claim(String method, String path, String bodySha256, String rankHint, String subagentAffinityId,
        String worker, long timestampMillis, String nonce) {
      this(method, path, bodySha256, rankHint, subagentAffinityId, null, null, worker, timestampMillis, nonce);
    }

    /** A claim of a request without a cache salt header. */
    public Claim(String method, String path, String bodySha256, String rankHint, String subagentAffinityId,
        String kvRetention, String worker, long timestampMillis, String nonce) {
      this(method, path, bodySha256, rankHint, subagentAffinityId, kvRetention, null, worker, timestampMillis, nonce);
    }

    /** The canonical JSON that is signed. */
    public String canonicalJson() {
      Map<String, Object> m = new LinkedHashMap<>(16);
      m.put("purpose", PURPOSE);
      m.put("method", method);
      m.put("path", path);
      m.put("body_sha256", bodySha256);
      m.put("rank_hint", rankHint);
      m.put("subagent_affinity_id", subagentAffinityId);
      if (kvRetention != null) {  // only when sent: claims without it are signed as before
        m.put("kv_retention", kvRetention);
      }
      if (cacheSalt != null) {  // likewise
        m.put("cache_salt", cacheSalt);
      }
      m.put("worker", worker);
      m.put("ts", timestampMillis);
      m.put("nonce", nonce);
      return InternalAuth.canonicalJson(m);
    }
  }

  /** Lower-case hex SHA-256 of {@code body} (null: no body). */
  public static String sha256(byte[] body) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(body == null ? EMPTY : body));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is unavailable", e);
    }
  }

  /** The header value for a claim: {@code t=<ts>,n=<nonce>,sha256=<hex>}. */
  public static String headerValue(InternalAuth auth, Claim claim) {
    return "t=" + claim.timestampMillis() + ",n=" + claim.nonce() + "," + auth.sign(claim.canonicalJson());
  }

  /** Signs requests for one frontend: a fresh nonce per signature (a random prefix and a counter). Thread-safe. */
  public static final class Signer {
    private final InternalAuth auth;
    private final Clock clock;
    private final String prefix;
    private final AtomicLong counter = new AtomicLong();

    public Signer(InternalAuth auth, Clock clock) {
      this.auth = Objects.requireNonNull(auth, "auth");
      this.clock = Objects.requireNonNull(clock, "clock");
      byte[] random = new byte[12];
      new SecureRandom().nextBytes(random);
      this.prefix = HexFormat.of().formatHex(random);
    }

    /** The {@value #HEADER} value for one write of a request. */
    public String sign(String method, String path, byte[] body, String rankHint, String subagentAffinityId,
        String worker) {
      return sign(method, path, body, rankHint, subagentAffinityId, null, worker);
    }

    /** The {@value #HEADER} value for one write of a request that carries a KV retention header too. */
    public String sign(String method, String path, byte[] body, String rankHint, String subagentAffinityId,
        String kvRetention, String worker) {
      return sign(method, path, body, rankHint, subagentAffinityId, kvRetention, null, worker);
    }

    /** The {@value #HEADER} value for one write of a request with a KV retention and a cache salt header (or nulls). */
    public String sign(String method, String path, byte[] body, String rankHint, String subagentAffinityId,
        String kvRetention, String cacheSalt, String worker) {
      String nonce = prefix + "-" + Long.toHexString(counter.incrementAndGet());
      return headerValue(auth, new Claim(method, path, sha256(body), rankHint, subagentAffinityId, kvRetention,
          cacheSalt, worker, clock.millis(), nonce));
    }
  }

  /**
   * Checks {@value #HEADER} on a worker: signature, timestamp window, nonce seen once. Thread-safe; the
   * nonce memory is bounded by {@link #MAX_REMEMBERED} and by the window.
   */
  public static final class Verifier {
    private record Seen(String nonce, long expiresMillis) {}

    private final InternalAuth auth;
    private final String worker;
    private final Clock clock;
    private final long windowMillis;
    private final Map<String, Long> seen = new HashMap<>(); // guarded by this
    private final PriorityQueue<Seen> expiry =
        new PriorityQueue<>((a, b) -> Long.compare(a.expiresMillis(), b.expiresMillis())); // guarded by this

    /**
     * @param worker this worker's name, as its {@code /server_info} reports it
     * @param window how far a timestamp may be from {@code clock}, either way (positive)
     */
    public Verifier(InternalAuth auth, String worker, Clock clock, Duration window) {
      this.auth = Objects.requireNonNull(auth, "auth");
      this.worker = Objects.requireNonNull(worker, "worker");
      this.clock = Objects.requireNonNull(clock, "clock");
      if (window.isNegative() || window.isZero()) {
        throw new IllegalArgumentException("the auth window must be positive: " + window);
      }
      this.windowMillis = window.toMillis();
    }

    /**
     * Why this request is refused (401), or null when it is authentic and new (its nonce is then
     * remembered). Needs nothing but the raw request: runs before the body is decoded or parsed.
     */
    public String refusal(String method, String path, HeaderSource headers, byte[] body) {
      String value = headers.first(HEADER);
      if (value == null) {
        return "missing " + HEADER + ": this worker has an internal_request_auth_key and serves signed requests only";
      }
      String[] parts = value.strip().split(",", -1);
      if (parts.length != 3 || !parts[0].startsWith("t=") || !parts[1].startsWith("n=")
          || !parts[2].startsWith("sha256=")) {
        return "malformed " + HEADER + " (expected t=<unix ms>,n=<nonce>,sha256=<hex>)";
      }
      String ts = parts[0].substring(2);
      String nonce = parts[1].substring(2);
      if (!TIMESTAMP.matcher(ts).matches() || !NONCE.matcher(nonce).matches()) {
        return "malformed " + HEADER + " (expected t=<unix ms>,n=<nonce>,sha256=<hex>)";
      }
      long timestamp = Long.parseLong(ts);
      Claim claim = new Claim(method, path, sha256(body), headers.first(WorkerExtensions.RANK_HINT_HEADER),
          headers.first(InternalAuth.SUBAGENT_AFFINITY_HEADER), headers.first(WorkerExtensions.KV_RETENTION_HEADER),
          headers.first(WorkerExtensions.CACHE_SALT_HEADER), worker, timestamp, nonce);
      if (!auth.verify(claim.canonicalJson(), parts[2])) {
        return "invalid " + HEADER + " signature (another key, or the request was altered)";
      }
      long now = clock.millis();
      if (Math.abs(now - timestamp) > windowMillis) {
        return HEADER + " timestamp is " + (now - timestamp) + " ms from this worker's clock; at most "
            + windowMillis + " ms either way are accepted (a replay, or clocks out of sync)";
      }
      synchronized (this) {
        while (!expiry.isEmpty() && expiry.peek().expiresMillis() < now) {
          seen.remove(expiry.poll().nonce());
        }
        if (seen.containsKey(nonce)) {
          return HEADER + " was already used: a replayed request";
        }
        if (seen.size() >= MAX_REMEMBERED) {
          return "too many signed requests within the " + HEADER + " window; try again";
        }
        long expires = timestamp + windowMillis;
        seen.put(nonce, expires);
        expiry.add(new Seen(nonce, expires));
      }
      return null;
    }

    /** Nonces remembered now (tests, metrics). */
    public synchronized int remembered() {
      return seen.size();
    }
  }
}
