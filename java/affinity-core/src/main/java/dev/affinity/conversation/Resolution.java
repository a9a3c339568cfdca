package dev.affinity.conversation;

import dev.affinity.config.SubagentScope;
import dev.affinity.routing.Fleet;

/**
 * The outcome of resolution for one request.
 *
 * @param conversationId the request's own conversation id (null when it has none); never rewritten
 *     to the parent's
 * @param affinityId the server-private sub-agent affinity id (the parent's id), null for a main agent
 *     or with the feature off; never read from a body and never written back to a client
 * @param synthesized whether {@code conversationId} was made up ({@code subagent:<uuid>}) for a child
 *     that had a parent header but no id of its own
 * @param tenant with tenant isolation, the API key's tenant id (both ids are then in its namespace); null
 *     otherwise
 */
public record Resolution(String conversationId, String affinityId, boolean synthesized, String tenant) {

  public static final Resolution NONE = new Resolution(null, null, false, null);

  /** A resolution outside tenant isolation. */
  public Resolution(String conversationId, String affinityId, boolean synthesized) {
    this(conversationId, affinityId, synthesized, null);
  }

  /**
   * The same ids in {@code tenant}'s namespace ({@code <tenant>/<id>}), so that one API key can never
   * name another's conversation or parent; {@code tenant} is kept for the KV cache salt.
   */
  public Resolution scopedTo(String tenant) {
    return new Resolution(conversationId == null ? null : inTenant(tenant, conversationId),
        affinityId == null ? null : inTenant(tenant, affinityId), synthesized, tenant);
  }

  /** {@code id} in {@code tenant}'s namespace: {@code <tenant>/<id>}. */
  public static String inTenant(String tenant, String id) {
    return tenant + "/" + id;
  }

  public boolean isSubagent() {
    return affinityId != null;
  }

  /**
   * The key the given fleet routes by. Context: the affinity id if present, else the own id.
   * Generation: the own id with scope context; with scope both, like context. Null when the request
   * has no id at all (routers then fall back to content).
   */
  public String routingKey(Fleet fleet, SubagentScope scope) {
    if (fleet == Fleet.CONTEXT || scope == SubagentScope.BOTH) {
      return affinityId != null ? affinityId : conversationId;
    }
    return conversationId;
  }
}
