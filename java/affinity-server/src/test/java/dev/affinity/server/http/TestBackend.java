package dev.affinity.server.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.admission.PromptLimit;
import dev.affinity.admission.PromptTokenizer;
import dev.affinity.admission.QueueLimit;
import dev.affinity.conversation.HeaderSource;
import dev.affinity.frontend.ClientSink;
import dev.affinity.frontend.CompletionHandler;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.OpenAiRequest;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/** A scriptable backend: the handler, model list, readiness and cluster info are set per test. */
final class TestBackend implements FrontendBackend {
  /** What a test's handler sees of an admitted request: the body and the headers. */
  @FunctionalInterface
  interface Handler {
    void handle(OpenAiRequest request, HeaderSource headers, ClientSink sink);
  }

  volatile Handler handler =
      (request, headers, sink) -> sink.fail(500, ErrorResponse.of(500, "no handler set", null), null);
  volatile List<String> models = List.of("test-model");
  volatile boolean ready = true;
  volatile JsonNode clusterInfo = new ObjectMapper().createObjectNode().put("is_ready", true)
      .put("context_servers", 1).put("generation_servers", 2);

  /** Read when a server starts. */
  volatile Map<String, ExtraEndpoint> extras = Map.of();
  /** Read when a server starts. */
  volatile PromptTokenizer tokenizer = PromptTokenizer.NONE;
  /** Read when a server starts. */
  volatile PromptLimit promptLimit = PromptLimit.NONE;
  /** Read when a server starts. */
  volatile QueueLimit queueLimit = QueueLimit.DEFAULT;

  final AtomicInteger calls = new AtomicInteger();
  volatile OpenAiRequest lastRequest;
  volatile HeaderSource lastHeaders;

  @Override
  public CompletionHandler handler() {
    return (admitted, sink) -> {
      calls.incrementAndGet();
      lastRequest = admitted.request();
      lastHeaders = admitted.headers();
      handler.handle(admitted.request(), admitted.headers(), sink);
    };
  }

  @Override
  public PromptTokenizer tokenizer() {
    return tokenizer;
  }

  @Override
  public QueueLimit queueLimit() {
    return queueLimit;
  }

  @Override
  public PromptLimit promptLimit() {
    return promptLimit;
  }

  @Override
  public List<String> models() {
    return models;
  }

  @Override
  public boolean ready() {
    return ready;
  }

  @Override
  public JsonNode clusterInfo() {
    return clusterInfo;
  }

  @Override
  public Map<String, ExtraEndpoint> extraEndpoints() {
    return extras;
  }
}
