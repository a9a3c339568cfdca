package dev.affinity.config;

import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;

/**
 * Affinity's own settings: the {@code affinity:} block of the YAML.
 *
 * @param model the model name served to clients ({@code /v1/models}) and checked on requests; empty: as
 *     upstream, the model names come from the context workers and requests are not checked
 * @param sessionHeaders headers that carry a conversation id, in priority order (matched
 *     case-insensitively); TensorRT-LLM's list by default
 * @param debugHeaders whether responses carry {@code x-affinity-route}
 * @param accessLog where the JSON access log goes: empty for none, "-" for stdout, else a file path
 * @param apiKeys accepted bearer keys; empty means no authentication
 * @param allowClientDisaggregatedParams accept {@code disaggregated_params} from public clients
 * @param requestTimeoutSeconds end-to-end request timeout
 * @param maxRequestBodyBytes request bodies above this get 413
 * @param tokenizer how prompts become ids: a BPE encoding's name (embedded workers' codec; {@link #BPE_ENCODINGS}),
 *     {@code model} (the pytorch backend's own tokenizer), or the absolute path of a model's tokenizer directory
 *     (the frontend routes on the model's ids and embedded workers simulate over them)
 * @param requireInternalAuth a missing {@code internal_request_auth_key} is a start-up error instead of a
 *     warning
 * @param allowUnauthenticatedClusterStorage the frontend may serve its HTTP cluster storage without
 *     {@code internal_request_auth_key} (any process on its host can then register or delete a worker); without it
 *     that is a start-up error ({@link StartupChecks})
 * @param selectionTtlSeconds a routing selection never released expires after this (set it above the
 *     longest a request may take, or its worker's load is forgotten while it runs)
 * @param maxPromptTokens the longest prompt accepted (400 at admission above it); 0: derived from the
 *     workers (embedded pools' {@code max_seq_len} or one rank's KV cache, the sections' {@code max_seq_len})
 * @param tenantIsolation conversation and parent ids are scoped per API key and the KV cache is salted per
 *     key (needs {@code api_keys})
 * @param workerMaxConnections most connections the frontend opens to one remote worker, 0 for no limit
 * @param sessionFinalHeader the request header (lower case) whose value {@code true} ends the request's
 *     session once it is answered: its pins and parent link are released
 * @param sessionIdleTtlSeconds a session (conversation id) without a request for this long expires: its pins
 *     and parent link are released
 * @param softPlacementMargin soft first placement of sub-agents in the conversation-aware routers: a margin
 *     (>= 0), or -1 for off; empty: each router's default (on in {@code affinity}, off in {@code conversation})
 * @param ioThreads the frontend's event-loop threads (client connections and the worker connections that share
 *     them); 0: one per available processor
 * @param maxQueuedRequests the most completion requests admitted and not yet answered; more get 503 with
 *     {@code Retry-After}; 0: {@value #DEFAULT_MAX_QUEUED_REQUESTS}
 * @param maxQueuedTokens the most prompt tokens of those requests; 0: derived (four times the context fleet's KV
 *     cache when the frontend knows it, else no token bound)
 * @param warmUpRequests requests {@code serve} sends through a copy of its path before it listens
 * @param agent agent-aware scheduling: request priority and KV retention across tool calls
 * @param sharedState {@code shared_state}: what several frontends share through NATS (the workers' KV events);
 *     empty: nothing, each frontend polls every worker itself
 */
public record AffinitySettings(
    Optional<String> model,
    List<String> sessionHeaders,
    boolean debugHeaders,
    Optional<String> accessLog,
    List<String> apiKeys,
    boolean allowClientDisaggregatedParams,
    double requestTimeoutSeconds,
    long maxRequestBodyBytes,
    String tokenizer,
    boolean requireInternalAuth,
    boolean allowUnauthenticatedClusterStorage,
    double selectionTtlSeconds,
    long maxPromptTokens,
    boolean tenantIsolation,
    int workerMaxConnections,
    String sessionFinalHeader,
    double sessionIdleTtlSeconds,
    OptionalDouble softPlacementMargin,
    int ioThreads,
    long maxQueuedRequests,
    long maxQueuedTokens,
    int warmUpRequests,
    AgentSettings agent,
    Optional<SharedStateSettings> sharedState,
    long promptPrefixBytes,
    long keptTurnBytes) {

  /**
   * {@code prompt_prefix_bytes} when it is not set (-1): derived, an eighth of the JVM's heap and at most
   * {@link #MAX_DERIVED_PROMPT_PREFIX_BYTES} ({@link #promptPrefixBudget}). The memory each conversation's last prompt
   * (rendered text, ids) may take in all, kept so that the next turn encodes only what changed (docs/tokenizer.md).
   */
  public static final long DEFAULT_PROMPT_PREFIX_BYTES = -1;
  public static final long MAX_DERIVED_PROMPT_PREFIX_BYTES = 256L << 20;

  /** {@code prompt_prefix_bytes}, or when it is not set an eighth of {@code maxHeapBytes}, at most 256 MiB. */
  public long promptPrefixBudget(long maxHeapBytes) {
    return promptPrefixBytes >= 0 ? promptPrefixBytes : Math.min(MAX_DERIVED_PROMPT_PREFIX_BYTES, maxHeapBytes / 8);
  }

  /**
   * {@code kept_turn_bytes} when it is not set (-1): derived as {@code prompt_prefix_bytes} is ({@link #keptTurnBudget}).
   * The memory each conversation's last turn as the frontend read and wrote it (its chat body, its legs' ids' JSON)
   * may take in all, kept so that the next turn reads and writes only what changed
   * ({@code dev.affinity.admission.KeptTurns}).
   */
  public static final long DEFAULT_KEPT_TURN_BYTES = -1;

  /** {@code kept_turn_bytes}, or when it is not set an eighth of {@code maxHeapBytes}, at most 256 MiB. */
  public long keptTurnBudget(long maxHeapBytes) {
    return keptTurnBytes >= 0 ? keptTurnBytes : Math.min(MAX_DERIVED_PROMPT_PREFIX_BYTES, maxHeapBytes / 8);
  }

  /**
   * {@code warm_up_requests} when it is not set: requests {@code affinity serve} sends through a throw-away copy of
   * its request path before it listens (docs/configuration.md#warm-up).
   */
  public static final int DEFAULT_WARM_UP_REQUESTS = 30_000;

  /** {@code max_queued_requests} when it is not set. */
  public static final long DEFAULT_MAX_QUEUED_REQUESTS = 4096;

  /** The BPE encodings {@code tokenizer} may name (jtokkit's). */
  public static final java.util.List<String> BPE_ENCODINGS =
      java.util.List.of("cl100k_base", "o200k_base", "p50k_base", "p50k_edit", "r50k_base");

  /** Whether {@code tokenizer} is one of {@link #BPE_ENCODINGS} (in any case). */
  public static boolean isBpeEncoding(String tokenizer) {
    return BPE_ENCODINGS.contains(tokenizer.toLowerCase(java.util.Locale.ROOT));
  }

  /** Whether a {@code tokenizer} value names a codec (a BPE encoding or {@code model}) rather than a directory. */
  public static boolean namesCodec(String tokenizer) {
    return isBpeEncoding(tokenizer) || "model".equals(tokenizer);
  }

  /** The model's tokenizer directory when {@code tokenizer} names one. */
  public Optional<java.nio.file.Path> tokenizerDirectory() {
    return namesCodec(tokenizer) ? Optional.empty() : Optional.of(java.nio.file.Path.of(tokenizer));
  }

  /** Dynamo's header that ends a session ({@code X-Dynamo-Session-Final: true}). */
  public static final String DEFAULT_SESSION_FINAL_HEADER = "x-dynamo-session-final";
  public static final double DEFAULT_SESSION_IDLE_TTL_SECONDS = 3600;

  /** The model name embedded CPU-executor workers answer with when none is configured. */
  public static final String DEFAULT_MODEL = "affinity-sim";

  /** TensorRT-LLM's session headers, in its order (tensorrt_llm/serve/conversation_id.py). */
  public static final List<String> DEFAULT_SESSION_HEADERS = List.of(
      "x-claude-code-session-id",
      "x-claude-session-id",
      "x-session-id",
      "x-correlation-id",
      "x-session-affinity",
      "x-multi-turn-session-id");

  public AffinitySettings {
    sessionHeaders = List.copyOf(sessionHeaders);
    apiKeys = List.copyOf(apiKeys);
    java.util.Objects.requireNonNull(agent, "agent");
    java.util.Objects.requireNonNull(sharedState, "sharedState");
    if (workerMaxConnections < 0) {
      throw new IllegalArgumentException("workerMaxConnections must be >= 0, got " + workerMaxConnections);
    }
    sessionFinalHeader = sessionFinalHeader.strip().toLowerCase(java.util.Locale.ROOT);
    if (ioThreads < 0) {
      throw new IllegalArgumentException("ioThreads must be >= 0, got " + ioThreads);
    }
    if (warmUpRequests < 0) {
      throw new IllegalArgumentException("warmUpRequests must be >= 0, got " + warmUpRequests);
    }
    if (!(sessionIdleTtlSeconds > 0)) {
      throw new IllegalArgumentException("sessionIdleTtlSeconds must be > 0, got " + sessionIdleTtlSeconds);
    }
  }

  public static AffinitySettings defaults() {
    return new AffinitySettings(Optional.empty(), DEFAULT_SESSION_HEADERS, false, Optional.empty(), List.of(), false,
        180.0, 16L * 1024 * 1024, "cl100k_base", false, false, 180.0, 0, false, 0, DEFAULT_SESSION_FINAL_HEADER,
        DEFAULT_SESSION_IDLE_TTL_SECONDS, OptionalDouble.empty(), 0, 0, 0, DEFAULT_WARM_UP_REQUESTS,
        AgentSettings.defaults(), Optional.empty(), DEFAULT_PROMPT_PREFIX_BYTES,
        DEFAULT_KEPT_TURN_BYTES);
  }

  /** These settings with {@code apiKeys} in place of theirs. */
  public AffinitySettings withApiKeys(List<String> apiKeys) {
    return new AffinitySettings(model, sessionHeaders, debugHeaders, accessLog, apiKeys, allowClientDisaggregatedParams,
        requestTimeoutSeconds, maxRequestBodyBytes, tokenizer, requireInternalAuth, allowUnauthenticatedClusterStorage,
        selectionTtlSeconds, maxPromptTokens,
        tenantIsolation, workerMaxConnections, sessionFinalHeader, sessionIdleTtlSeconds, softPlacementMargin, ioThreads,
        maxQueuedRequests, maxQueuedTokens, warmUpRequests, agent, sharedState, promptPrefixBytes, keptTurnBytes);
  }

  /** The configured model, or {@value #DEFAULT_MODEL}. */
  public String modelOrDefault() {
    return model.orElse(DEFAULT_MODEL);
  }
}
