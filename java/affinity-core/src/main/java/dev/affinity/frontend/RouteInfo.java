package dev.affinity.frontend;

import java.util.StringJoiner;

/**
 * Where a request ran and what the executors reported (not what the routers planned): the context
 * and generation workers and their attention-DP ranks (-1 unknown), the own conversation id, the
 * sub-agent affinity id (null for none), prompt tokens served from the context worker's cache (-1
 * unknown), the retries spent, and the routing keys the two fleets used. Rendered as the
 * {@code x-affinity-route} header (without the keys, which the access log carries).
 */
public record RouteInfo(
    long requestId,
    String ctxWorker,
    int ctxRank,
    String genWorker,
    int genRank,
    String conversationId,
    String affinityId,
    int reusedTokens,
    int retries,
    String ctxKey,
    String genKey) {

  public static RouteInfo empty(long requestId) {
    return new RouteInfo(requestId, null, -1, null, -1, null, null, -1, 0, null, null);
  }

  /** {@code ctx=...; ctx_rank=...; gen=...; gen_rank=...; conversation=...; affinity=...; reused=...}, unknown parts left out. */
  public String toHeader() {
    StringJoiner j = new StringJoiner("; ");
    if (ctxWorker != null) {
      j.add("ctx=" + ctxWorker);
    }
    if (ctxRank >= 0) {
      j.add("ctx_rank=" + ctxRank);
    }
    if (genWorker != null) {
      j.add("gen=" + genWorker);
    }
    if (genRank >= 0) {
      j.add("gen_rank=" + genRank);
    }
    if (conversationId != null) {
      j.add("conversation=" + conversationId);
    }
    if (affinityId != null) {
      j.add("affinity=" + affinityId);
    }
    if (reusedTokens >= 0) {
      j.add("reused=" + reusedTokens);
    }
    return j.toString();
  }

  public RouteInfo withContext(String worker, int rank, int reused) {
    return new RouteInfo(requestId, worker, rank, genWorker, genRank, conversationId, affinityId, reused, retries, ctxKey, genKey);
  }

  public RouteInfo withGeneration(String worker, int rank) {
    return new RouteInfo(requestId, ctxWorker, ctxRank, worker, rank, conversationId, affinityId, reusedTokens, retries, ctxKey, genKey);
  }

  public RouteInfo withConversation(String conversation, String affinity) {
    return new RouteInfo(requestId, ctxWorker, ctxRank, genWorker, genRank, conversation, affinity, reusedTokens, retries, ctxKey, genKey);
  }

  public RouteInfo withKeys(String ctx, String gen) {
    return new RouteInfo(requestId, ctxWorker, ctxRank, genWorker, genRank, conversationId, affinityId, reusedTokens, retries,
        ctx, gen);
  }

  public RouteInfo withRetries(int n) {
    return new RouteInfo(requestId, ctxWorker, ctxRank, genWorker, genRank, conversationId, affinityId, reusedTokens, n, ctxKey, genKey);
  }
}
