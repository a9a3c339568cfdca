package dev.affinity.routing;

import dev.affinity.executor.KvCacheStats;
import dev.affinity.worker.Worker;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * {@code llmd_scorer}: llm-d's endpoint picker as a baseline: the Gateway API Inference Extension's
 * scheduling profile as llm-d deploys it by default (kubernetes-sigs/gateway-api-inference-extension
 * v1.3.0, {@code config/charts/inferencepool/templates/epp-config.yaml}: {@code queue-scorer} weight 2,
 * {@code kv-cache-utilization-scorer} weight 2, {@code prefix-cache-scorer} weight 3, max-score picker).
 * Each endpoint (a worker, or each attention-DP rank of it: llm-d makes every DP rank an endpoint)
 * gets {@code sum(weight * score)} with every score in [0, 1], and the highest wins (ties at random):
 *
 * <ul>
 *   <li>prefix ({@code pkg/epp/scheduling/framework/plugins/multi/prefix/plugin.go}, {@code indexer.go}):
 *       the prompt's first {@code max_prefix_blocks} (256) whole blocks of the endpoint's KV block size
 *       ({@code autoTune}) are chained-hashed; walking them in order until no endpoint holds a block,
 *       each endpoint counts the blocks it holds; the score is that count over the blocks hashed. The
 *       index is approximate: after each decision the chosen endpoint's LRU (as many entries as it
 *       has KV blocks, {@code autoTune}; else {@code lru_capacity_per_server}, 31,250) gets the
 *       prompt's blocks;</li>
 *   <li>queue ({@code scorer/queue.go}): {@code (maxQ - q) / (maxQ - minQ)} over the endpoints, q the
 *       endpoint's requests waiting for admission (1 for all when they are equal);</li>
 *   <li>KV utilization ({@code scorer/kvcache_utilization.go}): {@code 1 - } the fraction of the
 *       endpoint's KV blocks that live requests hold.</li>
 * </ul>
 *
 * <p>Queue and KV use are the workers' own statistics ({@link Worker#kvCacheStats}), read at each
 * decision (llm-d scrapes them every 50 ms); workers that do not report them count as idle and empty.
 * The generation variant is the same profile over the generation workers (llm-d's decode profile is
 * a scorer profile too) with its own index. Randomness comes from a fixed seed, so runs repeat.
 * Sub-agent headers are not read.
 */
public final class LlmdScorerRouter extends AbstractRouter {
  private final double prefixWeight;
  private final double queueWeight;
  private final double kvWeight;
  private final int maxPrefixBlocks;
  private final long lruCapacity;
  private final boolean autoTune;
  private final SplittableRandom random = new SplittableRandom(0x2545F4914F6CDD1DL);
  /** Per endpoint location: the block keys routed there, most recently used last. */
  private final Map<Integer, LinkedHashMap<Long, Boolean>> routed = new HashMap<>();
  /** The endpoint locations of each worker that got requests. */
  private final Map<String, List<Integer>> locationsByWorker = new HashMap<>();
  /** Block key -> how many endpoints hold it, to stop the walk where none does. */
  private final Map<Long, Integer> holders = new HashMap<>();

  public LlmdScorerRouter(RouterContext context, double prefixWeight, double queueWeight, double kvWeight,
      int maxPrefixBlocks, long lruCapacity, boolean autoTune) {
    super(context);
    this.prefixWeight = prefixWeight;
    this.queueWeight = queueWeight;
    this.kvWeight = kvWeight;
    this.maxPrefixBlocks = maxPrefixBlocks;
    this.lruCapacity = lruCapacity;
    this.autoTune = autoTune;
  }

  static LlmdScorerRouter create(RouterContext context, RouterArgs args) {
    double prefix = args.getDouble("prefix_cache_weight", 3, 0, 1e6);
    double queue = args.getDouble("queue_weight", 2, 0, 1e6);
    double kv = args.getDouble("kv_cache_utilization_weight", 2, 0, 1e6);
    int maxBlocks = args.getInt("max_prefix_blocks", 256, 1, 1 << 20);
    long capacity = args.getLong("lru_capacity_per_server", 31_250, 1, Long.MAX_VALUE);
    boolean autoTune = args.getBoolean("auto_tune", true);
    args.done(RouterArgs.ADOPTED);
    return new LlmdScorerRouter(context, prefix, queue, kv, maxBlocks, capacity, autoTune);
  }

  @Override
  public String type() {
    return "llmd_scorer";
  }

  /** The prefix index is fed by the router's own decisions. */
  @Override
  public boolean usesKvEvents() {
    return false;
  }

  @Override
  protected Object prepare(RoutingRequest request, List<Worker> candidates) {
    int bs = candidates.get(0).info().tokensPerBlock();
    long[] keys = PromptBlocks.keys(request, bs);
    int n = Math.min(maxPrefixBlocks, PromptBlocks.fullBlocks(request, bs));
    return java.util.Arrays.copyOf(keys, Math.min(n, keys.length));
  }

  /** What an endpoint reports: requests waiting for admission and KV use, (0, 0) when it does not say. */
  private record Metrics(long waiting, double kvUsage, long kvBlocks) {}

  private static Metrics metrics(Candidate c) {
    Worker w = c.worker();
    if (c.rank() >= 0) {
      KvCacheStats s = w.kvCacheStats(c.rank());
      return s == null ? new Metrics(0, 0, 0) : new Metrics(Math.max(0, s.queuedRequests()), Math.max(0, s.usage()),
          Math.max(0, s.maxNumBlocks()));
    }
    long waiting = 0;
    long used = 0;
    long blocks = 0;
    for (int r = 0; r < w.info().numRanks(); r++) {
      KvCacheStats s = w.kvCacheStats(r);
      if (s != null) {
        waiting += Math.max(0, s.queuedRequests());
        used += Math.max(0, s.usedNumBlocks());
        blocks += Math.max(0, s.maxNumBlocks());
      }
    }
    return new Metrics(waiting, blocks == 0 ? 0 : (double) used / blocks, blocks);
  }

  @Override
  protected Choice choose(RoutingRequest request, List<Worker> workers, Object prepared) {
    long[] keys = (long[]) prepared;
    List<Candidate> cands = new ArrayList<>();
    for (Worker w : workers) {
      cands.addAll(candidatesOf(w));
    }
    int n = cands.size();
    int[] matched = new int[n];
    for (int b = 0; b < keys.length && holders.containsKey(keys[b]); b++) {
      for (int i = 0; i < n; i++) {
        Map<Long, Boolean> lru = routed.get(locationOf(cands.get(i)));
        if (lru != null && lru.containsKey(keys[b])) {
          matched[i]++;
        }
      }
    }
    Metrics[] m = new Metrics[n];
    long minQ = Long.MAX_VALUE;
    long maxQ = Long.MIN_VALUE;
    for (int i = 0; i < n; i++) {
      m[i] = metrics(cands.get(i));
      minQ = Math.min(minQ, m[i].waiting());
      maxQ = Math.max(maxQ, m[i].waiting());
    }
    double best = Double.NEGATIVE_INFINITY;
    List<Integer> tied = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      double prefix = keys.length == 0 ? 0 : (double) matched[i] / keys.length;
      double queue = maxQ == minQ ? 1 : (double) (maxQ - m[i].waiting()) / (maxQ - minQ);
      double score = prefixWeight * prefix + queueWeight * queue + kvWeight * (1 - m[i].kvUsage());
      if (score > best) {
        best = score;
        tied.clear();
      }
      if (score == best) {
        tied.add(i);
      }
    }
    int chosen = tied.get(tied.size() == 1 ? 0 : random.nextInt(tied.size()));
    Candidate c = cands.get(chosen);
    record(c, keys, m[chosen]);
    DecisionReason reason = matched[chosen] > 0 ? DecisionReason.PREFIX : DecisionReason.LOAD;
    return new Choice(c, matched[chosen], matched[chosen] * c.worker().info().tokensPerBlock(), reason);
  }

  /**
   * The chosen endpoint's LRU gets the prompt's blocks in order (so a prompt's first block is its
   * least recently used, as in the upstream indexer); what falls out of it no longer counts.
   */
  private void record(Candidate c, long[] keys, Metrics m) {
    long capacity = autoTune && m.kvBlocks() > 0 ? m.kvBlocks() : lruCapacity;
    int loc = locationOf(c);
    LinkedHashMap<Long, Boolean> lru = routed.computeIfAbsent(loc, x -> {
      locationsByWorker.computeIfAbsent(c.workerId(), w -> new ArrayList<>()).add(x);
      return new LinkedHashMap<>(256, 0.75f, true);
    });
    for (long k : keys) {
      if (lru.put(k, Boolean.TRUE) == null) {
        holders.merge(k, 1, Integer::sum);
      }
    }
    Iterator<Long> oldest = lru.keySet().iterator();
    while (lru.size() > capacity && oldest.hasNext()) {
      long k = oldest.next();
      oldest.remove();
      forget(k);
    }
  }

  private void forget(long key) {
    holders.computeIfPresent(key, (x, v) -> v == 1 ? null : v - 1);
  }

  @Override
  protected void onWorkerRemoved(String workerId) {
    for (int loc : locationsByWorker.getOrDefault(workerId, List.of())) {
      Map<Long, Boolean> lru = routed.remove(loc);
      if (lru != null) {
        lru.keySet().forEach(this::forget);
      }
    }
    locationsByWorker.remove(workerId);
  }
}
