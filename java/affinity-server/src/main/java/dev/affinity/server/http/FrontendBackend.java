package dev.affinity.server.http;

import com.fasterxml.jackson.databind.JsonNode;
import dev.affinity.admission.PromptLimit;
import dev.affinity.admission.PromptTokenizer;
import dev.affinity.frontend.CompletionHandler;
import java.util.List;
import java.util.Map;

/**
 * What the HTTP frontend serves: the orchestration behind {@code /v1/completions} and
 * {@code /v1/chat/completions}, and the state the informational endpoints report. Every method may be
 * called from any Netty event-loop thread and must not block.
 */
public interface FrontendBackend {

  /**
   * {@code GET /perf_metrics}: the per-request records gathered since the last call (upstream's aggregator shape),
   * each handed out once; by default none.
   */
  default JsonNode perfMetrics() {
    return com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.arrayNode();
  }

  /** Brings the meters that are read as snapshots (per-rank loads) up to date; called before each scrape. */
  default void beforeScrape() {}

  /**
   * Serves admitted completion requests. {@link CompletionHandler#handle} is called on the connection's
   * event loop: it must return quickly and answer through the sink later, from any thread.
   */
  CompletionHandler handler();

  /**
   * The prompt's token ids for routing and in-process executors, computed once at admission (on the
   * event loop). Default: none (routers work from text; remote workers tokenize).
   */
  default PromptTokenizer tokenizer() {
    return PromptTokenizer.NONE;
  }

  /**
   * {@code POST /v1/messages/count_tokens}: the number of tokens of {@code request}'s prompt (the Anthropic body,
   * {@code anthropicBody}, converted to chat with {@code max_tokens} 1). Default: counted with {@link #tokenizer()}
   * (the embedded workers' tokenizer); a backend without one (remote workers) forwards {@code anthropicBody} to a
   * context worker. A {@link dev.affinity.protocol.ProtocolException} in the stage is answered with its status.
   */
  default java.util.concurrent.CompletionStage<Integer> countTokens(dev.affinity.protocol.ChatCompletionRequest request,
      byte[] anthropicBody) {
    int[] ids = tokenizer().tokenize(request);
    if (ids == null) {
      return java.util.concurrent.CompletableFuture.failedFuture(dev.affinity.protocol.ProtocolException.of(501,
          "count_tokens: this frontend has no tokenizer for the model and no context worker to ask", null));
    }
    return java.util.concurrent.CompletableFuture.completedFuture(ids.length);
  }

  /** The most work in flight ({@link QueueLimit}); more is answered 503 with {@code Retry-After}. */
  default dev.affinity.admission.QueueLimit queueLimit() {
    return dev.affinity.admission.QueueLimit.DEFAULT;
  }

  /** The longest prompt accepted, checked at admission before routing. Default: no limit. */
  default PromptLimit promptLimit() {
    return PromptLimit.NONE;
  }

  /**
   * Each conversation's kept last turn ({@link dev.affinity.admission.KeptTurns}); by default none: nothing kept,
   * every body read whole.
   */
  default java.util.Optional<dev.affinity.admission.KeptTurns> keptTurns() {
    return java.util.Optional.empty();
  }

  /**
   * Model names the backend serves (added to {@link FrontendOptions#models()}); a request naming any
   * other model gets 404. When both lists are empty every model name is accepted.
   */
  List<String> models();

  /**
   * Whether a request's model must be one of the served models (404 otherwise). False does as upstream's
   * frontend, which has no model name of its own: any model is accepted, and {@code /v1/models} lists the
   * {@link #models()} the ready context workers report, or answers 503 while there are none. Default true.
   */
  default boolean checksModel() {
    return true;
  }

  /**
   * The body of a completion request as JSON. Default: the body as received. Worker mode decodes the msgpack
   * bodies upstream's frontend sends with {@code X-TRTLLM-Msgpack: 1}. Runs on the event loop.
   *
   * @throws dev.affinity.protocol.ProtocolException (400) for a body that cannot be decoded
   */
  default byte[] requestBody(byte[] body, dev.affinity.conversation.HeaderSource headers) {
    return body;
  }

  /**
   * Authenticates a request that passed the head checks, on its raw bytes, before anything else looks at it
   * (readiness, body decoding, parsing, validation, the model): null lets it go on; otherwise the message of
   * a 401. Worker mode checks Affinity's leg signature here (docs/workers.md). Runs on the event loop.
   * Default: every request goes on.
   *
   * @param method the request's method, upper case
   * @param path the request's path, without the query
   * @param body the body (empty for none)
   */
  default String authenticate(String method, String path, dev.affinity.conversation.HeaderSource headers,
      byte[] body) {
    return null;
  }

  /** Whether the cluster can take requests: {@code /health} is 200 when true, else 503. */
  boolean ready();

  /** The body of {@code GET /cluster_info}. */
  JsonNode clusterInfo();

  /**
   * Routes served besides the built-in ones, by exact path (for example worker mode's
   * {@code /server_info}); read once when the server starts. A path may not be a built-in one.
   * Default: none.
   */
  default Map<String, ExtraEndpoint> extraEndpoints() {
    return Map.of();
  }

  /**
   * The sub-agent parent links nested sub-agents are resolved by (shared with the other frontends of an etcd
   * cluster, and released with their sessions); empty: the frontend keeps links of its own.
   */
  default java.util.Optional<dev.affinity.conversation.ParentLinks> parentLinks() {
    return java.util.Optional.empty();
  }
}
