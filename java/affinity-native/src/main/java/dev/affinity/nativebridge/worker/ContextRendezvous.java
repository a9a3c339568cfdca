package dev.affinity.nativebridge.worker;

import dev.affinity.protocol.DisaggregatedParams;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Generation-first hand-off between in-process workers: the generation leg arrives first, without
 * context phase params, and waits here under its disaggregated request id until the context leg of
 * that id finishes and publishes them (what TensorRT-LLM's cache transceiver does across processes).
 */
final class ContextRendezvous {
  private static final ConcurrentHashMap<Long, CompletableFuture<DisaggregatedParams>> WAITING = new ConcurrentHashMap<>();

  private ContextRendezvous() {}

  /** The params of the context with this request id, when it finishes. */
  static CompletableFuture<DisaggregatedParams> await(long disaggRequestId) {
    return WAITING.computeIfAbsent(disaggRequestId, k -> new CompletableFuture<>());
  }

  /** Publishes a finished context; a generation leg waiting for it proceeds. */
  static void publish(long disaggRequestId, DisaggregatedParams params) {
    WAITING.computeIfAbsent(disaggRequestId, k -> new CompletableFuture<>()).complete(params);
  }

  /** Forgets an id (its generation leg is gone or has taken the params). */
  static void forget(long disaggRequestId) {
    WAITING.remove(disaggRequestId);
  }
}
