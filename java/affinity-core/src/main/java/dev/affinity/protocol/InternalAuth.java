package dev.affinity.protocol;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * TensorRT-LLM's internal request authentication ({@code tensorrt_llm/serve/disagg_auth.py}; the
 * sub-agent affinity signature from PR #18684), keyed by the shared {@code internal_request_auth_key}:
 *
 * <ul>
 *   <li>{@value #DISAGG_AUTH_HEADER}: on generation requests whose {@code disaggregated_params} carry
 *       {@code encoded_opaque_state} or {@code ctx_info_endpoint}, {@code "sha256=" + hex(HMAC-SHA256(key,
 *       canonical))} over {@code {"ctx_info_endpoint": E, "encoded_opaque_state": S}} (E the first element
 *       of a list, null for an empty one);
 *   <li>{@value #SUBAGENT_AFFINITY_AUTH_HEADER}: signs the {@value #SUBAGENT_AFFINITY_HEADER} hint bound to
 *       its destination role and the child's identity ({@link SubagentAffinityClaim}).
 * </ul>
 *
 * <p>Canonical text is Python's {@code json.dumps(..., sort_keys=True, separators=(",", ":"))} with
 * {@code ensure_ascii}; the key and the canonical text are UTF-8 encoded. Instances are immutable and
 * thread-safe; {@link #toString()} never shows the key.
 */
public final class InternalAuth {

  public static final String DISAGG_AUTH_HEADER = "x-trtllm-disagg-auth";
  public static final String SUBAGENT_AFFINITY_HEADER = "x-trtllm-subagent-affinity-id";
  public static final String SUBAGENT_AFFINITY_AUTH_HEADER = "x-trtllm-subagent-affinity-auth";
  /** The value of {@code purpose} in the sub-agent affinity payload. */
  public static final String SUBAGENT_AFFINITY_PURPOSE = SUBAGENT_AFFINITY_HEADER;

  private static final String PREFIX = "sha256=";
  private static final String HMAC_SHA256 = "HmacSHA256";
  private static final char[] HEX = "0123456789abcdef".toCharArray();

  /** The worker role a sub-agent affinity signature is bound to ({@code ServerRole.name}). */
  public enum Role {
    CONTEXT,
    GENERATION;

    /** The role a worker without {@code --server_role} infers: context_only → CONTEXT, generation_only → GENERATION, else none. */
    public static Optional<Role> inferredFrom(DisaggRequestType type) {
      if (type == DisaggRequestType.CONTEXT_ONLY) {
        return Optional.of(CONTEXT);
      }
      return type == DisaggRequestType.GENERATION_ONLY ? Optional.of(GENERATION) : Optional.empty();
    }
  }

  private final SecretKeySpec key;

  /**
   * @param key the shared {@code internal_request_auth_key}; non-empty (Python treats an empty key as none)
   */
  public InternalAuth(String key) {
    Objects.requireNonNull(key, "key");
    if (key.isEmpty()) {
      throw new IllegalArgumentException("the internal request auth key must not be empty");
    }
    this.key = new SecretKeySpec(key.getBytes(StandardCharsets.UTF_8), HMAC_SHA256);
  }

  /** An instance for {@code key}, or empty when it is null or empty (no key configured). */
  public static Optional<InternalAuth> ofNullable(String key) {
    return key == null || key.isEmpty() ? Optional.empty() : Optional.of(new InternalAuth(key));
  }

  // ---- x-trtllm-disagg-auth ----

  /** Whether the request carries protected hand-off fields ({@code encoded_opaque_state} or {@code ctx_info_endpoint}). */
  public static boolean requiresDisaggAuth(OpenAiRequest request) {
    DisaggregatedParams p = request.disaggregatedParams();
    return p != null && p.isAuthProtected();
  }

  /** The canonical payload of {@value #DISAGG_AUTH_HEADER} for these fields (either may be null). */
  public static String disaggCanonical(String ctxInfoEndpoint, String encodedOpaqueState) {
    Map<String, Object> payload = new LinkedHashMap<>(4);
    payload.put("ctx_info_endpoint", ctxInfoEndpoint);
    payload.put("encoded_opaque_state", encodedOpaqueState);
    return PythonJsonDumps.canonical(payload);
  }

  /** The canonical payload of {@value #DISAGG_AUTH_HEADER} for these params (list endpoints: the first element). */
  public static String disaggCanonical(DisaggregatedParams params) {
    StringOrList endpoint = params.ctxInfoEndpoint();
    return disaggCanonical(endpoint == null ? null : endpoint.first(), params.encodedOpaqueState());
  }

  /** The {@value #DISAGG_AUTH_HEADER} value for these params. */
  public String signDisagg(DisaggregatedParams params) {
    return sign(disaggCanonical(params));
  }

  /** Whether {@code header} is the valid {@value #DISAGG_AUTH_HEADER} for these params (constant time). */
  public boolean verifyDisagg(DisaggregatedParams params, String header) {
    return verify(disaggCanonical(params), header);
  }

  // ---- x-trtllm-subagent-affinity-auth ----

  /** The {@value #SUBAGENT_AFFINITY_AUTH_HEADER} value for this claim. */
  public String signSubagentAffinity(SubagentAffinityClaim claim) {
    return sign(claim.canonicalJson());
  }

  /** Whether {@code header} is the valid {@value #SUBAGENT_AFFINITY_AUTH_HEADER} for this claim (constant time). */
  public boolean verifySubagentAffinity(SubagentAffinityClaim claim, String header) {
    return verify(claim.canonicalJson(), header);
  }

  // ---- generic ----

  /**
   * Python's {@code json.dumps(value, sort_keys=True, separators=(",", ":"))} (ensure_ascii) of null,
   * booleans, integers, strings, string-keyed maps and lists.
   *
   * @throws IllegalArgumentException for other values (floats included)
   */
  public static String canonicalJson(Object value) {
    return PythonJsonDumps.canonical(value);
  }

  /** {@code "sha256=" + hex(HMAC-SHA256(key, UTF-8 of canonical))}. */
  public String sign(String canonical) {
    byte[] mac = hmac(canonical.getBytes(StandardCharsets.UTF_8));
    char[] out = new char[PREFIX.length() + mac.length * 2];
    PREFIX.getChars(0, PREFIX.length(), out, 0);
    for (int i = 0, o = PREFIX.length(); i < mac.length; i++) {
      out[o++] = HEX[(mac[i] >> 4) & 0xf];
      out[o++] = HEX[mac[i] & 0xf];
    }
    return new String(out);
  }

  /** Whether {@code header} equals {@link #sign}{@code (canonical)}, compared in constant time; false for null. */
  public boolean verify(String canonical, String header) {
    if (header == null) {
      return false;
    }
    return MessageDigest.isEqual(sign(canonical).getBytes(StandardCharsets.UTF_8),
        header.getBytes(StandardCharsets.UTF_8));
  }

  private byte[] hmac(byte[] data) {
    try {
      Mac mac = Mac.getInstance(HMAC_SHA256);
      mac.init(key);
      return mac.doFinal(data);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HMAC-SHA256 is unavailable", e);
    }
  }

  @Override
  public String toString() {
    return "InternalAuth[key=***]";
  }
}
