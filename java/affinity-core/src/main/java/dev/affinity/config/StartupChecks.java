package dev.affinity.config;

import java.util.ArrayList;
import java.util.List;

/**
 * What the frontend refuses to start with although the file is a valid TensorRT-LLM disaggregated config. Such a
 * file still loads ({@link ConfigLoader} reads upstream's format as upstream does, its own test configs included);
 * these problems are reported by {@code affinity config check} and at start-up ({@code affinity serve} before its
 * warm-up, and {@code AffinityServer.start} for a service that embeds the frontend), each naming file, key and line.
 */
public final class StartupChecks {
  private StartupChecks() {}

  /** Every reason {@code c} must not be served; empty when it may. */
  public static List<ConfigProblem> of(DisaggConfig c) {
    List<ConfigProblem> out = new ArrayList<>();
    openClusterStorage(c, out);
    return List.copyOf(out);
  }

  /**
   * The frontend's HTTP cluster storage without {@code internal_request_auth_key} takes no credential: any process on
   * this host could register a worker (which then receives prompts) or delete one. As a database without
   * authentication refuses to start, the frontend does, unless {@code affinity.allow_unauthenticated_cluster_storage}
   * accepts the risk. etcd storage is guarded by etcd's own authentication, not here.
   */
  private static void openClusterStorage(DisaggConfig c, List<ConfigProblem> out) {
    if (!c.servesOpenClusterStorage() || c.affinity().allowUnauthenticatedClusterStorage()) {
      return;
    }
    DisaggConfig.DisaggClusterConfig cluster = c.disaggCluster().orElseThrow();
    out.add(new ConfigProblem(cluster.uriLocation(), "disagg_cluster.cluster_uri", "the HTTP cluster storage ("
        + cluster.clusterUri() + ") takes no credential without internal_request_auth_key: any process on this host "
        + "could register a worker (which then receives prompts) or delete one, so the frontend does not start. Set "
        + "internal_request_auth_key here and on every Affinity worker (--auth-key; stock trtllm-serve workers cannot "
        + "sign storage requests, they join over etcd), or use cluster_uri: etcd://HOST:PORT, or accept the risk with "
        + "affinity.allow_unauthenticated_cluster_storage: true"));
  }
}
