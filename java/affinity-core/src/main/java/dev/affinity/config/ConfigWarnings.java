package dev.affinity.config;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Valid configurations that will not do what they seem to. Each warning names the fix. Printed at
 * startup and by {@code affinity config check}.
 */
public final class ConfigWarnings {
  /** Router types that route by conversation / sub-agent affinity id. */
  public static final Set<String> AFFINITY_ROUTERS = Set.of("conversation", "affinity");

  private ConfigWarnings() {}

  public static List<ConfigWarning> of(DisaggConfig c) {
    List<ConfigWarning> out = new ArrayList<>();
    boolean subagents = c.subagentHeader().isPresent();
    String header = c.subagentHeader().orElse("");
    if (subagents) {
      routerKeepsAffinity(c.context(), "sub-agents will not follow their parent's context instance", out);
      if (c.subagentScope() == SubagentScope.BOTH) {
        routerKeepsAffinity(c.generation(), "subagent_affinity_scope: both cannot pin generation", out);
      }
    } else if (c.subagentScope() == SubagentScope.BOTH) {
      out.add(new ConfigWarning(Location.unknown(c.source()), "subagent_affinity_scope",
          "is both but conversation_affinity_header_for_subagents is not set, so it has no effect.",
          "set conversation_affinity_header_for_subagents (e.g. X-Dynamo-Parent-Session-ID) or drop the scope"));
    }

    boolean ctxByConversation = subagents || AFFINITY_ROUTERS.contains(c.context().router().type());
    if (ctxByConversation && !c.context().isEmbedded() && usesAttentionDp(c.context()) && !conversationRanks(c.context())) {
      out.add(new ConfigWarning(c.context().location(), "context_servers.attention_dp_config",
          "rank affinity is inactive: the context workers use attention DP but do not route ranks by conversation, "
              + "so a conversation reaches the right instance but not the rank that holds its prefix.",
          "set attention_dp_config: {kv_cache_routing_conversation_affinity: true} under context_servers"));
    }
    if (subagents && c.subagentScope() == SubagentScope.BOTH && !c.generation().isEmbedded()
        && usesAttentionDp(c.generation()) && !conversationRanks(c.generation())) {
      out.add(new ConfigWarning(c.generation().location(), "generation_servers.attention_dp_config",
          "subagent_affinity_scope is both but the generation workers do not route ranks by conversation.",
          "set attention_dp_config: {kv_cache_routing_conversation_affinity: true} under generation_servers, "
              + "or use subagent_affinity_scope: context"));
    }
    boolean httpWorkers = !c.context().isEmbedded() || !c.generation().isEmbedded();
    if (subagents && httpWorkers && c.internalRequestAuthKey().isEmpty()) {
      out.add(new ConfigWarning(Location.unknown(c.source()), "internal_request_auth_key",
          "conversation_affinity_header_for_subagents (" + header + ") is set with trtllm-serve workers but no "
              + "internal_request_auth_key: the sub-agent affinity id is never sent unsigned, so those workers rank-route "
              + "sub-agents by their own id.",
          "set internal_request_auth_key here and on every worker"));
    }
    clusterStorageOptIn(c, out);
    TokenizerSource.warnings(c, out);
    return out;
  }

  /**
   * The open HTTP cluster storage, accepted by {@code affinity.allow_unauthenticated_cluster_storage} (without it, a
   * start-up error: {@link StartupChecks}); or that opt-in where it changes nothing.
   */
  private static void clusterStorageOptIn(DisaggConfig c, List<ConfigWarning> out) {
    if (!c.affinity().allowUnauthenticatedClusterStorage()) {
      return;
    }
    if (c.servesOpenClusterStorage()) {
      out.add(new ConfigWarning(c.disaggCluster().orElseThrow().uriLocation(), "disagg_cluster.cluster_uri",
          "the HTTP cluster storage takes no credential without internal_request_auth_key, and "
              + "affinity.allow_unauthenticated_cluster_storage accepts that: any process on this host can register a "
              + "worker (which then receives prompts) or delete one.",
          "set internal_request_auth_key here and on every Affinity worker (--auth-key), or use cluster_uri: "
              + "etcd://HOST:PORT, and drop allow_unauthenticated_cluster_storage"));
      return;
    }
    String why = c.disaggCluster().isEmpty() ? "there is no disagg_cluster"
        : !c.disaggCluster().get().isHttp() ? "the cluster storage is etcd, which this frontend does not serve"
        : "internal_request_auth_key is set, so every cluster storage request must be signed with it";
    out.add(new ConfigWarning(Location.unknown(c.source()), "affinity.allow_unauthenticated_cluster_storage",
        "is true but has no effect: " + why + ".", "drop allow_unauthenticated_cluster_storage"));
  }

  private static void routerKeepsAffinity(ServerSection s, String consequence, List<ConfigWarning> out) {
    String type = s.router().type();
    if (!AFFINITY_ROUTERS.contains(type)) {
      out.add(new ConfigWarning(s.router().typeLocation(), s.name() + ".router.type",
          "is " + type + ", which does not route by conversation id, but conversation_affinity_header_for_subagents "
              + "is set: " + consequence + ".",
          "set " + s.name() + ".router.type to conversation (or affinity)"));
    }
  }

  private static boolean usesAttentionDp(ServerSection s) {
    return Boolean.TRUE.equals(s.workerArg("enable_attention_dp").orElse(false));
  }

  private static boolean conversationRanks(ServerSection s) {
    return Boolean.TRUE.equals(s.workerArg("attention_dp_config.kv_cache_routing_conversation_affinity").orElse(false));
  }
}
