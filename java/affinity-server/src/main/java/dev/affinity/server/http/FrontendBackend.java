package dev.affinity.server.http;

import com.fasterxml.jackson.databind.JsonNode;
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
   * Model names the backend serves (added to {@link FrontendOptions#models()}); a request naming any
   * other model gets 404. When both lists are empty every model name is accepted.
   */
  List<String> models();

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
}
