package dev.affinity.config;

import java.util.List;
import java.util.Optional;

/**
 * Affinity's own settings: the {@code affinity:} block of the YAML.
 *
 * @param model the model name served to clients ({@code /v1/models}) and checked on requests
 * @param sessionHeaders headers that carry a conversation id, in priority order (matched
 *     case-insensitively); TensorRT-LLM's list by default
 * @param debugHeaders whether responses carry {@code x-affinity-route}
 * @param accessLog where the JSON access log goes: empty for none, "-" for stdout, else a file path
 * @param apiKeys accepted bearer keys; empty means no authentication
 * @param allowClientDisaggregatedParams accept {@code disaggregated_params} from public clients
 * @param requestTimeoutSeconds end-to-end request timeout
 * @param maxRequestBodyBytes request bodies above this get 413
 * @param tokenizer the BPE encoding used for text prompts of embedded workers
 * @param workerMaxConnections most connections the frontend opens to one remote worker, 0 for no limit
 */
public record AffinitySettings(
    String model,
    List<String> sessionHeaders,
    boolean debugHeaders,
    Optional<String> accessLog,
    List<String> apiKeys,
    boolean allowClientDisaggregatedParams,
    double requestTimeoutSeconds,
    long maxRequestBodyBytes,
    String tokenizer,
    int workerMaxConnections) {

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
    if (workerMaxConnections < 0) {
      throw new IllegalArgumentException("workerMaxConnections must be >= 0, got " + workerMaxConnections);
    }
  }

  public static AffinitySettings defaults() {
    return new AffinitySettings("affinity-sim", DEFAULT_SESSION_HEADERS, false, Optional.empty(), List.of(), false,
        180.0, 16L * 1024 * 1024, "cl100k_base", 0);
  }
}
