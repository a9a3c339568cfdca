package dev.affinity.server.shared;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;

/**
 * The names of a cluster's shared KV events in NATS: the stream {@code AFFINITY_KV_<cluster>}, the drain bucket
 * {@code AFFINITY_DRAIN_<cluster>}, the subjects {@code affinity.<cluster>.kv.<worker token>} and the drain keys (the
 * worker token), and what a batch's HMAC covers.
 */
final class KvNames {
  final String clusterToken;
  final String streamName;
  final String bucketName;

  /** {@code clusterName}: {@code disagg_cluster.cluster_name}, or "" (static urls: {@code default}). */
  KvNames(String clusterName) {
    this.clusterToken = sanitize(clusterName.isBlank() ? "default" : clusterName);
    this.streamName = "AFFINITY_KV_" + clusterToken;
    this.bucketName = "AFFINITY_DRAIN_" + clusterToken;
  }

  /** {@code affinity.<cluster>.kv.}. */
  String subjectPrefix() {
    return "affinity." + clusterToken + ".kv.";
  }

  /** {@code affinity.<cluster>.load.}: the frontends' load reports ({@link SharedLoads}). */
  String loadSubjectPrefix() {
    return "affinity." + clusterToken + ".load.";
  }

  /** Every batch of the cluster: {@code affinity.<cluster>.kv.>}. */
  String subjects() {
    return subjectPrefix() + ">";
  }

  /** The subject of a worker's batches. */
  String subject(String workerId) {
    return subjectPrefix() + token(workerId);
  }

  /** The key of a worker's drain in the bucket. */
  static String key(String workerId) {
    return token(workerId);
  }

  /** The token of a worker id in subjects and keys: its characters outside [A-Za-z0-9_-] as _, and a hash. */
  static String token(String workerId) {
    byte[] d = sha256(workerId.getBytes(StandardCharsets.UTF_8));
    return sanitize(workerId) + "-" + HexFormat.of().formatHex(d, 0, 4);
  }

  static String sanitize(String s) {
    return s.replaceAll("[^A-Za-z0-9_-]", "_");
  }

  /** What the HMAC covers: a purpose, the worker id and the SHA-256 of the body. */
  static String canonical(String workerId, byte[] body) {
    return "affinity-kv-events\n" + workerId + "\n" + HexFormat.of().formatHex(sha256(body));
  }

  /** What a load report's HMAC covers ({@link SharedLoads}): a purpose and the body. */
  static String canonicalLoad(byte[] body) {
    return "affinity-load\n" + new String(body, StandardCharsets.UTF_8);
  }

  private static byte[] sha256(byte[] data) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(data);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
