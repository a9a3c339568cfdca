package dev.affinity.bench.drive;

import dev.affinity.bench.trace.TraceRequest;

/**
 * A request a driver is about to send.
 *
 * @param index             order of sending, from 0
 * @param request           its prompt (block ids), output length and session ids
 * @param agentId           the main agent it belongs to (its own session id for a main agent or a
 *                          trace request without a parent; the parent's otherwise)
 * @param idealReusedTokens what an infinite shared cache would have served of its prompt
 * @param pooledReusedTokens what one LRU cache of the fleet's context KV capacity would have served (the
 *                           pooled bound), -1 when unknown
 */
public record OutgoingRequest(long index, TraceRequest request, String agentId, int idealReusedTokens,
    int pooledReusedTokens) {
  /** A request whose pooled bound is unknown. */
  public OutgoingRequest(long index, TraceRequest request, String agentId, int idealReusedTokens) {
    this(index, request, agentId, idealReusedTokens, -1);
  }
}
