package dev.affinity.protocol;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * What {@code x-trtllm-subagent-affinity-auth} signs: the parent routing key bound to the destination
 * role and the child's identity (upstream {@code _sign_subagent_affinity}). Its canonical JSON has the
 * keys {@code purpose} (always {@value InternalAuth#SUBAGENT_AFFINITY_PURPOSE}), {@code role},
 * {@code model}, {@code conversation_id}, {@code subagent_affinity_id}, {@code request_type} and
 * {@code disagg_request_id}; null fields are written as JSON null.
 *
 * @param role {@code "CONTEXT"} or {@code "GENERATION"}
 * @param model the request's {@code model}
 * @param conversationId the child's own {@code conversation_params.conversation_id}, or null
 * @param subagentAffinityId the parent routing key (the header's value)
 * @param requestType {@code disaggregated_params.request_type} as its wire string, or null
 * @param disaggRequestId {@code disaggregated_params.disagg_request_id}, or null
 */
public record SubagentAffinityClaim(String role, String model, String conversationId, String subagentAffinityId,
    String requestType, Long disaggRequestId) {

  public SubagentAffinityClaim {
    Objects.requireNonNull(role, "role");
    Objects.requireNonNull(subagentAffinityId, "subagentAffinityId");
  }

  /** The claim an edge makes when it sends {@code request} to a worker of {@code role} with this parent key. */
  public static SubagentAffinityClaim of(OpenAiRequest request, InternalAuth.Role role, String subagentAffinityId) {
    DisaggregatedParams p = request.disaggregatedParams();
    ConversationParams c = request.conversationParams();
    return new SubagentAffinityClaim(role.name(), request.model(), c == null ? null : c.conversationId(),
        subagentAffinityId, p == null || p.requestType() == null ? null : p.requestType().wire(),
        p == null ? null : p.disaggRequestId());
  }

  /** The signed payload as a map in upstream's field order. */
  public Map<String, Object> fields() {
    Map<String, Object> m = new LinkedHashMap<>(10);
    m.put("purpose", InternalAuth.SUBAGENT_AFFINITY_PURPOSE);
    m.put("role", role);
    m.put("model", model);
    m.put("conversation_id", conversationId);
    m.put("subagent_affinity_id", subagentAffinityId);
    m.put("request_type", requestType);
    m.put("disagg_request_id", disaggRequestId);
    return m;
  }

  /** The canonical (sorted, compact, ASCII) JSON that is signed. */
  public String canonicalJson() {
    return PythonJsonDumps.canonical(fields());
  }
}
