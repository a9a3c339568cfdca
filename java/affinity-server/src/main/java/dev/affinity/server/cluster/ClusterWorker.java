package dev.affinity.server.cluster;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;

/**
 * One registered worker, as upstream stores it ({@code WorkerInfo} in {@code disagg_auto_scaling.py}): the
 * value of its key is {@code {"worker_id": ..., "host": ..., "port": ..., "role": 0|1}}. The frontend routes to
 * {@code host:port}; {@code host} is what the worker was started with, not resolved.
 */
public record ClusterWorker(String workerId, String host, int port, ServerRole role) {
  private static final ObjectMapper JSON = new ObjectMapper();

  public ClusterWorker {
    Objects.requireNonNull(workerId, "workerId");
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(role, "role");
    if (port <= 0 || port > 65535) {
      throw new IllegalArgumentException("port must be in [1, 65535]: " + port);
    }
  }

  /**
   * A new worker id as upstream makes one: {@code {ROLE}-{host}:{port}-{epoch ms}-{pid}-{rand 000..1000}}.
   */
  public static ClusterWorker create(ServerRole role, String host, int port) {
    String id = role.name() + "-" + host + ":" + port + "-" + System.currentTimeMillis() + "-" + ProcessHandle.current().pid()
        + "-" + String.format("%03d", ThreadLocalRandom.current().nextInt(1001));
    return new ClusterWorker(id, host, port, role);
  }

  /** {@code host:port}, the address a router knows the worker by. */
  public String address() {
    return host + ":" + port;
  }

  /** The stored value, byte for byte what Python's {@code json.dumps(asdict(info))} writes. */
  public String toJson() {
    try {
      return "{\"worker_id\": " + JSON.writeValueAsString(workerId) + ", \"host\": " + JSON.writeValueAsString(host)
          + ", \"port\": " + port + ", \"role\": " + role.value() + "}";
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Reads a stored value; unknown fields are ignored (the legacy {@code status} field, ...).
   *
   * @throws IllegalArgumentException naming what is missing or wrong
   */
  public static ClusterWorker parse(String value) {
    JsonNode n;
    try {
      n = JSON.readTree(value);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalArgumentException("not JSON: " + e.getOriginalMessage());
    }
    if (n == null || !n.isObject()) {
      throw new IllegalArgumentException("expected a JSON object with worker_id, host, port and role");
    }
    JsonNode id = n.get("worker_id");
    JsonNode host = n.get("host");
    JsonNode port = n.get("port");
    JsonNode role = n.get("role");
    if (id == null || !id.isTextual()) {
      throw new IllegalArgumentException("worker_id: expected a string");
    }
    if (host == null || !host.isTextual() || host.asText().isBlank()) {
      throw new IllegalArgumentException("host: expected a host name");
    }
    if (port == null || !port.canConvertToInt() || !port.isIntegralNumber()) {
      throw new IllegalArgumentException("port: expected an integer");
    }
    if (role == null || !role.isIntegralNumber()) {
      throw new IllegalArgumentException("role: expected 0 (context) or 1 (generation)");
    }
    return new ClusterWorker(id.asText(), host.asText(), port.asInt(), ServerRole.of(role.asInt()));
  }

  /** Upstream's key prefix of a cluster's workers: {@code /trtllm-disagg/{cluster_name}/workers}. */
  public static String keyPrefix(String clusterName) {
    return "/trtllm-disagg/" + clusterName + "/workers";
  }

  /** This worker's key in the cluster: {@code {prefix}/{worker_id}}. */
  public String key(String clusterName) {
    return keyPrefix(clusterName) + "/" + workerId;
  }
}
