package dev.affinity.server.workermode;

import dev.affinity.config.DisaggConfig.DisaggClusterConfig;
import dev.affinity.config.Location;
import dev.affinity.server.cluster.ServerRole;
import dev.affinity.server.cluster.WorkerRegistration;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * How a worker joins a {@code disagg_cluster} (upstream's {@code --disagg_cluster_uri} with the defaults it
 * builds when only the flag is given: cluster name "", heartbeat 5 s, inactive timeout 10 s).
 *
 * @param uri {@code http://host:port} (a frontend's own storage) or {@code etcd://h:p[,etcd://h2:p2]}
 * @param name the {@code cluster_name} that scopes the keys
 * @param role which fleet the worker serves
 * @param heartbeatIntervalSec how often the key's TTL is refreshed (no heartbeat unless below the timeout)
 * @param inactiveTimeoutSec the key's TTL
 * @param retry the wait between failed registrations (upstream: 5 s)
 */
public record WorkerCluster(String uri, String name, ServerRole role, int heartbeatIntervalSec, int inactiveTimeoutSec,
    Duration retry) {

  public WorkerCluster {
    Objects.requireNonNull(uri, "uri");
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(role, "role");
    Objects.requireNonNull(retry, "retry");
    String problem = DisaggClusterConfig.uriProblem(uri.strip());
    if (problem != null) {
      throw new IllegalArgumentException("--disagg-cluster-uri: " + problem);
    }
    uri = uri.strip();
    if (inactiveTimeoutSec <= 0) {
      throw new IllegalArgumentException("--inactive-timeout-sec must be positive: " + inactiveTimeoutSec);
    }
  }

  public static WorkerCluster of(String uri, ServerRole role) {
    return new WorkerCluster(uri, "", role, 5, 10, WorkerRegistration.RETRY);
  }

  public WorkerCluster withName(String clusterName) {
    return new WorkerCluster(uri, clusterName, role, heartbeatIntervalSec, inactiveTimeoutSec, retry);
  }

  private DisaggClusterConfig asConfig() {
    return new DisaggClusterConfig(uri, name, 1, 1, heartbeatIntervalSec, inactiveTimeoutSec,
        Location.unknown("--disagg-cluster-uri"));
  }

  public boolean isHttp() {
    return asConfig().isHttp();
  }

  public List<String> etcdEndpoints() {
    return asConfig().etcdEndpoints();
  }
}
