package dev.affinity.server.worker;

/**
 * Affinity's extensions of the trtllm-serve worker contract, spoken between Affinity frontends
 * ({@link HttpWorker}) and Affinity worker processes ({@code affinity worker}). A stock trtllm-serve
 * worker neither sends nor reads them, so both sides keep upstream behaviour with a foreign peer.
 *
 * <ul>
 *   <li>{@code /server_info} carries {@code "affinity": {"num_ranks": N, "ranks_visible": true, ...}}: the
 *       worker lets the frontend choose its attention-DP rank, so the router sees N routable ranks;
 *   <li>request legs to such a worker carry {@value #RANK_HINT_HEADER}{@code : <rank>}, the rank the
 *       router chose; the executor honours it while that rank has room;
 *   <li>and {@value #KV_RETENTION_HEADER}{@code : <json>} when the frontend asks the leg's blocks to be kept: a
 *       {@code KvCacheRetentionConfig} in the field names of TensorRT-LLM's Python binding
 *       ({@link dev.affinity.executor.KvRetentionJson}), which trtllm-serve's OpenAI protocol has no field for;
 *   <li>{@value #CACHE_SALT_HEADER}{@code : <salt>} on a completion leg with a KV cache salt (under
 *       {@code tenant_isolation} the tenant's), to a worker that reports {@value #COMPLETION_CACHE_SALT}: upstream
 *       models {@code cache_salt} on chat requests only, so a completion's salt travels beside the body. It is covered
 *       by the leg's signature ({@link LegAuth});
 *   <li>{@value #RELEASE_CONTEXT_PATH} on a worker that reports {@value #RELEASE_CONTEXT}: the frontend releases a
 *       context it will never send a generation leg for, signed as a generation worker's release is (audience
 *       {@value #RELEASE_AUDIENCE}).
 * </ul>
 */
public final class WorkerExtensions {
  /** Request header: the attention-DP rank the router chose (a decimal integer in [0, num_ranks)). */
  public static final String RANK_HINT_HEADER = "x-affinity-rank-hint";
  /** Request header: the leg's KV-cache retention ({@code KvCacheRetentionConfig} as JSON). */
  public static final String KV_RETENTION_HEADER = "x-affinity-kv-retention";
  /** Request header: a completion leg's KV cache salt (a completion body has no {@code cache_salt} upstream). */
  public static final String CACHE_SALT_HEADER = "x-affinity-cache-salt";
  /** In the extension object: the worker salts a completion's KV cache by {@value #CACHE_SALT_HEADER} (boolean). */
  public static final String COMPLETION_CACHE_SALT = "completion_cache_salt";
  /** In the extension object: the worker serves {@value #RELEASE_CONTEXT_PATH} (boolean). */
  public static final String RELEASE_CONTEXT = "release_context";
  /** The path a context worker releases held contexts on: {@code {"ctx_request_ids": [n, ...]}}. */
  public static final String RELEASE_CONTEXT_PATH = "/release_context";
  /** The worker field of a release's {@link LegAuth} claim: any holder of the key may release any context. */
  public static final String RELEASE_AUDIENCE = "kv-handoff";
  /** The {@code /server_info} key of Affinity's extension object. */
  public static final String SERVER_INFO_KEY = "affinity";
  /**
   * In the extension object: the worker publishes its own KV events to NATS JetStream ({@code affinity worker --nats}),
   * an object with {@value #KV_EVENTS_SUBJECT} (the subject its batches go to) and {@value #KV_EVENTS_PUBLISHER} (the
   * key they carry); its {@code /kv_cache_events} then answers an empty list.
   */
  public static final String KV_EVENTS_NATS = "kv_events_nats";
  public static final String KV_EVENTS_SUBJECT = "subject";
  public static final String KV_EVENTS_PUBLISHER = "publisher";
  /** In the extension object: the worker's attention-DP ranks (a positive integer). */
  public static final String NUM_RANKS = "num_ranks";
  /** In the extension object: whether the frontend may choose the rank (boolean). */
  public static final String RANKS_VISIBLE = "ranks_visible";

  private WorkerExtensions() {}
}
