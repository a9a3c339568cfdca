package dev.affinity.server.worker;

import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.InternalAuth;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.SubagentAffinityClaim;
import dev.affinity.worker.WorkerRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The internal headers of one request leg, as upstream's {@code OpenAIHttpClient._get_request_headers}:
 *
 * <ul>
 *   <li>{@code x-trtllm-disagg-auth} on generation-only legs whose {@code disaggregated_params} carry
 *       {@code encoded_opaque_state} or {@code ctx_info_endpoint}; without a key nothing is sent and a
 *       warning is logged once (upstream: a FutureWarning, enforcement announced);
 *   <li>{@code x-trtllm-subagent-affinity-id} + {@code x-trtllm-subagent-affinity-auth} when the leg has a
 *       (non-blank) affinity id, signed for role CONTEXT (context_only) or GENERATION (other legs, as
 *       upstream's generation client signs a request it sends); without a key the id is never sent
 *       (upstream refuses to send it unsigned) and a warning is logged once.
 * </ul>
 */
final class RequestSigner {
  private static final Logger LOG = LoggerFactory.getLogger(RequestSigner.class);

  /** One header. */
  record Header(String name, String value) {}

  private final String workerId;
  private final InternalAuth auth; // null: no key
  private final AtomicBoolean warnedDisagg = new AtomicBoolean();
  private final AtomicBoolean warnedAffinity = new AtomicBoolean();

  RequestSigner(String workerId, InternalAuth auth) {
    this.workerId = workerId;
    this.auth = auth;
  }

  /** The role a leg's affinity signature is bound to. */
  static InternalAuth.Role roleOf(DisaggRequestType leg) {
    return leg == DisaggRequestType.CONTEXT_ONLY ? InternalAuth.Role.CONTEXT : InternalAuth.Role.GENERATION;
  }

  List<Header> headers(WorkerRequest request) {
    List<Header> out = new ArrayList<>(3);
    OpenAiRequest body = request.body();
    DisaggRequestType leg = request.leg();
    if (leg == DisaggRequestType.GENERATION_ONLY && InternalAuth.requiresDisaggAuth(body)) {
      if (auth != null) {
        out.add(new Header(InternalAuth.DISAGG_AUTH_HEADER, auth.signDisagg(body.disaggregatedParams())));
      } else if (warnedDisagg.compareAndSet(false, true)) {
        LOG.warn("worker {}: generation requests carry encoded_opaque_state/ctx_info_endpoint but no"
            + " internal_request_auth_key is configured; sending them unsigned (TensorRT-LLM announces"
            + " enforcement in a future release)", workerId);
      }
    }
    String affinityId = request.affinityId() == null ? null : request.affinityId().strip();
    if (affinityId != null && !affinityId.isEmpty()) {
      if (auth != null) {
        SubagentAffinityClaim claim = SubagentAffinityClaim.of(body, roleOf(leg), affinityId);
        out.add(new Header(InternalAuth.SUBAGENT_AFFINITY_HEADER, affinityId));
        out.add(new Header(InternalAuth.SUBAGENT_AFFINITY_AUTH_HEADER, auth.signSubagentAffinity(claim)));
      } else if (warnedAffinity.compareAndSet(false, true)) {
        LOG.warn("worker {}: sub-agent affinity ids are not sent: they require internal_request_auth_key"
            + " (affinity then holds only up to the worker instance)", workerId);
      }
    }
    return out;
  }
}
