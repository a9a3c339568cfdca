package dev.affinity.server.workermode;

import dev.affinity.conversation.HeaderSource;
import dev.affinity.executor.KvRetention;
import dev.affinity.executor.KvRetentionJson;
import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.InternalAuth;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.SubagentAffinityClaim;
import dev.affinity.server.worker.WorkerExtensions;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The internal headers a worker process reads from its frontend, checked the way a trtllm-serve
 * worker checks them ({@code tensorrt_llm/serve/disagg_auth.py}, sub-agent affinity signing from PR #18684), plus Affinity's rank hint:
 *
 * <ul>
 *   <li>{@code x-trtllm-disagg-auth}: with a key, a generation-only leg carrying
 *       {@code encoded_opaque_state} or {@code ctx_info_endpoint} must be signed, else it is refused
 *       (401; the first refusal is a warning, later ones debug lines); without a key it is accepted and
 *       one warning is logged;
 *   <li>{@code x-trtllm-subagent-affinity-id}: honoured only when {@code x-trtllm-subagent-affinity-auth}
 *       verifies with the key for the role the request type implies (context_only → CONTEXT,
 *       generation_only → GENERATION; other requests ignore it, like an aggregated server); otherwise
 *       ignored, with one warning per reason;
 *   <li>{@value WorkerExtensions#RANK_HINT_HEADER}: a rank in [0, ranks) becomes the executor's hint;
 *       anything else is ignored (the executor picks the rank), with one warning;
 *   <li>{@value WorkerExtensions#KV_RETENTION_HEADER}: the leg's KV-cache retention, handed to the executor; a value
 *       that is not a valid {@code KvCacheRetentionConfig} is refused (400 naming the header);
 *   <li>{@value WorkerExtensions#CACHE_SALT_HEADER}: the leg's KV cache salt (a completion's; a chat carries its
 *       {@code cache_salt} in its body), handed to the executor; with a key it is covered by the leg's signature.
 * </ul>
 */
final class InternalHeaders {
  private static final Logger LOG = LoggerFactory.getLogger(InternalHeaders.class);

  private final String worker;
  private final InternalAuth auth; // null: no key
  private final int numRanks;
  private final AtomicBoolean warnedUnsigned = new AtomicBoolean();
  private final AtomicBoolean warnedRefused = new AtomicBoolean();
  private final AtomicBoolean warnedAffinityNoKey = new AtomicBoolean();
  private final AtomicBoolean warnedAffinityBad = new AtomicBoolean();
  private final AtomicBoolean warnedAffinityRole = new AtomicBoolean();
  private final AtomicBoolean warnedRankHint = new AtomicBoolean();

  /** Strict: a sub-agent affinity id that does not verify is refused (401), as upstream's worker does. */
  private final boolean strict;

  InternalHeaders(String worker, InternalAuth auth, int numRanks) {
    this(worker, auth, numRanks, false);
  }

  InternalHeaders(String worker, InternalAuth auth, int numRanks, boolean strict) {
    this.worker = worker;
    this.auth = auth;
    this.numRanks = numRanks;
    this.strict = strict;
  }

  /**
   * With {@code --require-internal-auth}: why a leg carrying a sub-agent affinity id whose signature is missing
   * or wrong is refused (401), or null. Legs without an id, and legs without a role (aggregated), pass.
   */
  String affinityRefusal(OpenAiRequest request, HeaderSource headers) {
    if (!strict || auth == null) {
      return null;
    }
    String raw = headers.first(InternalAuth.SUBAGENT_AFFINITY_HEADER);
    String id = raw == null ? null : raw.strip();
    DisaggregatedParams p = request.disaggregatedParams();
    Optional<InternalAuth.Role> role = InternalAuth.Role.inferredFrom(p == null ? null : p.requestType());
    if (id == null || id.isEmpty() || role.isEmpty()) {
      return null;
    }
    String signature = headers.first(InternalAuth.SUBAGENT_AFFINITY_AUTH_HEADER);
    if (signature == null) {
      return "missing " + InternalAuth.SUBAGENT_AFFINITY_AUTH_HEADER + " for " + InternalAuth.SUBAGENT_AFFINITY_HEADER;
    }
    if (!auth.verifySubagentAffinity(SubagentAffinityClaim.of(request, role.get(), id), signature)) {
      warnOnce(warnedRefused, "refused (401): a wrongly signed " + InternalAuth.SUBAGENT_AFFINITY_HEADER);
      return "invalid " + InternalAuth.SUBAGENT_AFFINITY_AUTH_HEADER + " signature";
    }
    return null;
  }

  /** Why the leg is refused (401), or null when it may run. */
  String refusal(OpenAiRequest request, HeaderSource headers) {
    DisaggregatedParams p = request.disaggregatedParams();
    if (p == null || p.requestType() != DisaggRequestType.GENERATION_ONLY || !p.isAuthProtected()) {
      return null;
    }
    if (auth == null) {
      if (warnedUnsigned.compareAndSet(false, true)) {
        LOG.warn("worker {}: generation requests with hand-off state are accepted unsigned: no"
            + " internal_request_auth_key is configured (--auth-key)", worker);
      }
      return null;
    }
    String header = headers.first(InternalAuth.DISAGG_AUTH_HEADER);
    String refusal = header == null
        ? "missing " + InternalAuth.DISAGG_AUTH_HEADER + " on a generation request with hand-off state"
        : auth.verifyDisagg(p, header) ? null : "invalid " + InternalAuth.DISAGG_AUTH_HEADER + " signature";
    if (refusal != null) {
      warnOnce(warnedRefused, "refused (401): " + refusal + "; do the frontends use this worker's key?");
    }
    return refusal;
  }

  /** The verified sub-agent affinity id, or null (absent, unsigned, wrongly signed, or not a disaggregated leg). */
  String affinityId(OpenAiRequest request, HeaderSource headers) {
    String raw = headers.first(InternalAuth.SUBAGENT_AFFINITY_HEADER);
    String id = raw == null ? null : raw.strip();
    if (id == null || id.isEmpty()) {
      return null;
    }
    DisaggregatedParams p = request.disaggregatedParams();
    Optional<InternalAuth.Role> role = InternalAuth.Role.inferredFrom(p == null ? null : p.requestType());
    if (role.isEmpty()) {
      warnOnce(warnedAffinityRole, "a sub-agent affinity id on a request that is neither context_only nor"
          + " generation_only is ignored");
      return null;
    }
    if (auth == null) {
      warnOnce(warnedAffinityNoKey, "sub-agent affinity ids are ignored: no internal_request_auth_key is"
          + " configured (--auth-key)");
      return null;
    }
    SubagentAffinityClaim claim = SubagentAffinityClaim.of(request, role.get(), id);
    if (!auth.verifySubagentAffinity(claim, headers.first(InternalAuth.SUBAGENT_AFFINITY_AUTH_HEADER))) {
      warnOnce(warnedAffinityBad, "a sub-agent affinity id without a valid " + InternalAuth.SUBAGENT_AFFINITY_AUTH_HEADER
          + " is ignored");
      return null;
    }
    return id;
  }

  /** The rank hint, or -1 (none, or unusable). */
  int rankHint(HeaderSource headers) {
    String raw = headers.first(WorkerExtensions.RANK_HINT_HEADER);
    if (raw == null) {
      return -1;
    }
    int rank;
    try {
      rank = Integer.parseInt(raw.strip());
    } catch (NumberFormatException e) {
      rank = -1;
    }
    if (rank < 0 || rank >= numRanks) {
      String shown = raw.length() <= 32 ? raw.strip() : raw.substring(0, 32) + "...";
      warnOnce(warnedRankHint, "a rank hint outside [0, " + numRanks + ") is ignored (" + shown + ")");
      return -1;
    }
    return rank;
  }

  /**
   * The leg's KV-cache retention from {@value WorkerExtensions#KV_RETENTION_HEADER}, or null without one; an
   * {@link IllegalArgumentException} naming what is wrong when the value is not a valid retention config.
   */
  KvRetention retention(HeaderSource headers) {
    String raw = headers.first(WorkerExtensions.KV_RETENTION_HEADER);
    return raw == null ? null : KvRetentionJson.parse(raw);
  }

  /** The leg's KV cache salt from {@value WorkerExtensions#CACHE_SALT_HEADER}, or null (the body's, if any, then). */
  String cacheSalt(HeaderSource headers) {
    return headers.first(WorkerExtensions.CACHE_SALT_HEADER);
  }

  private void warnOnce(AtomicBoolean flag, String message) {
    if (flag.compareAndSet(false, true)) {
      LOG.warn("worker {}: {} (logged once)", worker, message);
    } else {
      LOG.debug("worker {}: {}", worker, message);
    }
  }
}
