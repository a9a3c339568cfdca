package dev.affinity.frontend;

import java.util.Objects;
import java.util.StringJoiner;

/**
 * Where a request ran and what the executors reported (not what the routers planned), built from named
 * parts: the context and generation placements, the request's conversation ids and the routing keys its
 * two fleets used, and the retries spent. Rendered as the {@code x-affinity-route} header (without the
 * keys, which the access log carries).
 *
 * @param requestId the disaggregated request id of the attempt that answered (0 before one was issued)
 * @param context where the context leg ran (with the prompt tokens its cache served)
 * @param generation where the generation leg ran ({@link Placement#reusedTokens()} is unknown there)
 * @param conversation the own conversation id and the sub-agent affinity id
 * @param keys the routing keys the two fleets' routers received
 * @param retries the retries spent
 */
public record RouteInfo(long requestId, Placement context, Placement generation, Conversation conversation,
    RoutingKeys keys, int retries) {

  /**
   * One leg's worker and attention-DP rank (null / -1 when unknown), the prompt tokens served from
   * that worker's cache (-1 when unknown), and where the rank comes from when the executor did not
   * report it itself ({@code rankSource}, e.g. "hint" or "kv_events"; null otherwise).
   */
  public record Placement(String worker, int rank, int reusedTokens, String rankSource) {
    public static final Placement UNKNOWN = new Placement(null, -1, -1);

    /** A placement whose rank, if any, the executor reported. */
    public Placement(String worker, int rank, int reusedTokens) {
      this(worker, rank, reusedTokens, null);
    }

    /** A placement without a reuse count (generation legs). */
    public static Placement of(String worker, int rank) {
      return new Placement(worker, rank, -1);
    }
  }

  /** The request's own conversation id and its server-private sub-agent affinity id (null for none). */
  public record Conversation(String id, String affinityId) {
    public static final Conversation NONE = new Conversation(null, null);
  }

  /** The keys the context and generation routers routed by (null when the request had no id). */
  public record RoutingKeys(String context, String generation) {
    public static final RoutingKeys NONE = new RoutingKeys(null, null);
  }

  public RouteInfo {
    Objects.requireNonNull(context, "context");
    Objects.requireNonNull(generation, "generation");
    Objects.requireNonNull(conversation, "conversation");
    Objects.requireNonNull(keys, "keys");
  }

  /** Nothing known yet but the request id. */
  public static RouteInfo of(long requestId) {
    return new RouteInfo(requestId, Placement.UNKNOWN, Placement.UNKNOWN, Conversation.NONE, RoutingKeys.NONE, 0);
  }

  public RouteInfo withContext(Placement placement) {
    return new RouteInfo(requestId, placement, generation, conversation, keys, retries);
  }

  public RouteInfo withGeneration(Placement placement) {
    return new RouteInfo(requestId, context, placement, conversation, keys, retries);
  }

  public RouteInfo withConversation(Conversation ids) {
    return new RouteInfo(requestId, context, generation, ids, keys, retries);
  }

  public RouteInfo withKeys(RoutingKeys routingKeys) {
    return new RouteInfo(requestId, context, generation, conversation, routingKeys, retries);
  }

  public RouteInfo withRetries(int n) {
    return new RouteInfo(requestId, context, generation, conversation, keys, n);
  }

  public String ctxWorker() {
    return context.worker();
  }

  public int ctxRank() {
    return context.rank();
  }

  /** Prompt tokens served from the context worker's cache, -1 unknown. */
  public int reusedTokens() {
    return context.reusedTokens();
  }

  public String genWorker() {
    return generation.worker();
  }

  public int genRank() {
    return generation.rank();
  }

  public String conversationId() {
    return conversation.id();
  }

  public String affinityId() {
    return conversation.affinityId();
  }

  public String ctxKey() {
    return keys.context();
  }

  public String genKey() {
    return keys.generation();
  }

  /**
   * {@code ctx=...; ctx_rank=...; gen=...; gen_rank=...; conversation=...; affinity=...; reused=...}, unknown
   * parts left out; a rank the executor did not report itself is followed by its source
   * ({@code ctx_rank_src=...}, {@code gen_rank_src=...}).
   */
  public String toHeader() {
    StringJoiner j = new StringJoiner("; ");
    if (ctxWorker() != null) {
      j.add("ctx=" + ctxWorker());
    }
    addRank(j, "ctx_rank", context);
    if (genWorker() != null) {
      j.add("gen=" + genWorker());
    }
    addRank(j, "gen_rank", generation);
    if (conversationId() != null) {
      j.add("conversation=" + conversationId());
    }
    if (affinityId() != null) {
      j.add("affinity=" + affinityId());
    }
    if (reusedTokens() >= 0) {
      j.add("reused=" + reusedTokens());
    }
    return j.toString();
  }

  private static void addRank(StringJoiner j, String name, Placement p) {
    if (p.rank() >= 0) {
      j.add(name + "=" + p.rank());
      if (p.rankSource() != null) {
        j.add(name + "_src=" + p.rankSource());
      }
    }
  }
}
