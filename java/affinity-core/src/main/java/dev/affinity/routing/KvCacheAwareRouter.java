package dev.affinity.routing;

import dev.affinity.worker.Worker;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code kv_cache_aware} with upstream semantics ({@code KvCacheAwareRouter} in {@code tensorrt_llm/serve/router.py}):
 * {@code score = matched blocks - load_weight x active requests}; workers whose
 * {@code active / max_batch_size >= load_cap} are skipped unless all are; a chat request's content
 * key pins it to the worker its conversation used before (LRU of 50,000), which keeps a conversation
 * in place when eviction lowers its match; ties round-robin; after a successful request its routed
 * blocks are backfilled into the index ({@code track_routed_blocks}). Each worker is hashed with its
 * own {@code tokens_per_block} and algorithm (adopted from its server info). On workers with visible
 * ranks the best-matching rank is chosen.
 */
public final class KvCacheAwareRouter extends AbstractRouter {
  static final int ROUTE_AFFINITY_CACHE_SIZE = 50_000;

  private final boolean useTokens;
  private final int maxBatchSize;
  private final boolean trackRoutedBlocks;
  private final double loadWeight;
  private final double loadCap;
  private final LruMap<Long, String> contentPins = new LruMap<>(ROUTE_AFFINITY_CACHE_SIZE);

  public KvCacheAwareRouter(RouterContext context, boolean useTokens, int maxBatchSize, boolean trackRoutedBlocks,
      double loadWeight, double loadCap) {
    super(context);
    this.useTokens = useTokens;
    this.maxBatchSize = maxBatchSize;
    this.trackRoutedBlocks = trackRoutedBlocks;
    this.loadWeight = loadWeight;
    this.loadCap = loadCap;
  }

  static KvCacheAwareRouter create(RouterContext context, RouterArgs args) {
    boolean useTokens = args.getBoolean("use_tokens", false);
    int maxBatch = args.getInt("max_batch_size", 64, 1, Integer.MAX_VALUE);
    args.getInt("tokens_per_block", 32, 1, 1 << 20);  // adopted per worker from its server info
    boolean track = args.getBoolean("track_routed_blocks", true);
    double weight = args.getDouble("load_weight", 0.25, 0, Double.MAX_VALUE);
    double cap = args.getDouble("load_cap", Double.POSITIVE_INFINITY, 0, Double.POSITIVE_INFINITY);
    args.accept("custom_tokenizer", "tokenizer_dir", "use_harmony", "model_path");
    args.done(RouterArgs.ADOPTED);
    return new KvCacheAwareRouter(context, useTokens, maxBatch, track, weight, cap);
  }

  @Override
  public String type() {
    return "kv_cache_aware";
  }

  @Override
  protected Object prepare(RoutingRequest request, List<Worker> candidates) {
    return PrefixMatches.lookup(this, index, request, candidates);
  }

  @Override
  protected Choice choose(RoutingRequest request, List<Worker> candidates, Object prepared) {
    PrefixMatches matches = (PrefixMatches) prepared;
    List<Worker> eligible = new ArrayList<>();
    for (Worker w : candidates) {
      if ((double) load(w.id()).requests / maxBatchSize < loadCap) {
        eligible.add(w);
      }
    }
    if (eligible.isEmpty()) {
      eligible = candidates;
    }
    Worker pick = null;
    DecisionReason reason = DecisionReason.LOAD;
    Long contentKey = request.contentKey();
    if (contentKey != null) {
      String pinned = contentPins.get(contentKey);
      for (Worker w : eligible) {
        if (w.id().equals(pinned)) {
          pick = w;
          reason = DecisionReason.CONTENT_PIN;
        }
      }
    }
    if (pick == null) {
      double best = Double.NEGATIVE_INFINITY;
      List<Worker> tied = new ArrayList<>();
      for (Worker w : eligible) {
        double score = bestOf(w, matches) - loadWeight * load(w.id()).requests;
        if (score > best) {
          best = score;
          tied.clear();
        }
        if (score == best) {
          tied.add(w);
        }
      }
      pick = pickTied(tied);
      reason = bestOf(pick, matches) > 0 ? DecisionReason.PREFIX : DecisionReason.LOAD;
    }
    if (contentKey != null) {
      contentPins.put(contentKey, pick.id());
    }
    Candidate rank = bestRank(pick, matches);
    int matched = matches.blocks(locationOf(rank));
    return new Choice(rank, matched, matched * pick.info().tokensPerBlock(), reason);
  }

  /** The best match among a worker's candidates. */
  private int bestOf(Worker w, PrefixMatches matches) {
    int best = 0;
    for (int loc : locationsOf(w)) {
      best = Math.max(best, matches.blocks(loc));
    }
    return best;
  }

  /** The rank with the longest match, then the least loaded. */
  private Candidate bestRank(Worker w, PrefixMatches matches) {
    Candidate best = null;
    for (Candidate c : candidatesOf(w)) {
      if (best == null) {
        best = c;
        continue;
      }
      int mc = matches.blocks(locationOf(c));
      int mb = matches.blocks(locationOf(best));
      Load lc = load(c);
      Load lb = load(best);
      long vc = useTokens ? lc.tokens : lc.requests;
      long vb = useTokens ? lb.tokens : lb.requests;
      if (mc > mb || (mc == mb && vc < vb)) {
        best = c;
      }
    }
    return best;
  }

  @Override
  protected void onReleased(Selection selection, Outcome outcome) {
    if (outcome == Outcome.SUCCESS && trackRoutedBlocks) {
      backfill(selection);
    }
  }
}
