package dev.affinity.worker;

import dev.affinity.executor.KvEvent;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * A worker: one context or generation instance. Three kinds implement it: in-process native
 * workers, stock trtllm-serve workers over HTTP, and Affinity worker processes over the same wire
 * contract. Identity is the {@link #id()}: routers and prefix indexes key their state by it.
 */
public interface Worker extends AutoCloseable {
  /** Stable id: "host:port" for remote workers, a name for in-process ones. */
  String id();

  WorkerInfo info();

  /** False once the worker is known to be dead; routers then skip it and re-pin its keys. */
  boolean isAlive();

  /** Sends one leg of a request; the listener receives the result. Never throws for request errors. */
  WorkerCall send(WorkerRequest request, WorkerListener listener);

  /**
   * Frees the KV cache a finished context-only leg still holds, when its generation leg will never
   * come (the generation failed, or the client left between the legs). Default: nothing to free
   * (a trtllm-serve worker frees it on its own timeout).
   */
  default void releaseContext(dev.affinity.protocol.DisaggregatedParams contextParams) {}

  /**
   * The KV-cache statistics of one attention-DP rank (its waiting requests and KV use), for routers
   * that score on worker metrics; null when the worker cannot tell (the default: remote workers).
   */
  default dev.affinity.executor.KvCacheStats kvCacheStats(int rank) {
    return null;
  }

  /**
   * Text as this worker's model tokenizes it (no special tokens): how a stream cut mid-way is continued when the
   * frontend has no tokenizer. Remote workers ask upstream's {@code POST /_internal/tokenize}
   * (TensorRT-LLM {@code tensorrt_llm/serve/openai_protocol.py}, {@code TokenizeRequest}); the default cannot.
   */
  default CompletableFuture<int[]> tokenize(String text) {
    return CompletableFuture.failedFuture(new UnsupportedOperationException("worker " + id() + " cannot tokenize"));
  }

  /**
   * The client ended the session {@code conversationId} (or it expired): what the worker keeps for that
   * conversation becomes evictable first. In-process CPU executors with the per-conversation reuse policy drop the
   * turns they retain for it; the default keeps nothing per conversation (stock workers over HTTP evict on their
   * own).
   */
  default void endSession(String conversationId) {}

  /** Where the worker delivers its KV-cache events (its own stream or a poller); default: it has none. */
  default void onKvEvents(Consumer<List<KvEvent>> sink) {}

  /** Frees the worker's resources (executor, connections). */
  @Override
  default void close() {}
}
