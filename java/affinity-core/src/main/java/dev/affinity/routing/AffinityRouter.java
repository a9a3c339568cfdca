package dev.affinity.routing;

import dev.affinity.config.SubagentScope;
import dev.affinity.executor.KvCacheStats;
import dev.affinity.worker.Worker;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code affinity}: Affinity's own policy, cost-based at the level of (worker, attention-DP rank).
 *
 * <p>Context fleet: the cost of a candidate is the prefill work the request would cause there — its
 * uncached tokens {@code n} after the cached prefix {@code p}, {@code n + f((p+n)^2 - p^2)} with the
 * attention factor {@code f} — plus the prefill work already routed there and not finished, and never less than
 * the lockstep bound: the attention-DP ranks of an instance iterate together, so work queued on a sibling rank
 * delays this one too (up to {@code max_num_tokens} per iteration this request needs). Where the candidate's cache
 * is full, the tokens the request writes beyond its free blocks evict as many cached tokens of other requests,
 * which someone prefills again when they come back: each counts {@code eviction_weight} (default 1) token of work
 * more. The cached
 * prefix is the longer of what the KV events say and what was routed there in the last
 * {@code predict_ttl_seconds} (predict-on-route: siblings of a burst land together before any event
 * arrives). The routing key (sub-agent affinity id, else conversation id) is a soft pin: a key stays
 * on its (worker, rank) unless staying costs more than {@code pin_break_margin_tokens} over the best (default 0:
 * the cheapest wins, the pin breaks ties), or breaks the load bound; a dead, removed or excluded pin moves. With a
 * finite {@code load_epsilon} (default: none) no candidate takes a request that would put it above
 * {@code (1 + load_epsilon)} times the mean load. A new key goes, among the
 * candidates whose cost is within {@code placement_tolerance} (a fraction of the request's tokens) of
 * the best, to the highest rendezvous (HRW) score of key and candidate — so independent frontends
 * that see the same workers place it alike. A request without a key goes, among the candidates within that
 * tolerance, to the one with the fewest blocks cached (the most room for what it adds).
 *
 * <p>Generation fleet: the cost balances decode slots ({@code active / max_batch_size}) and KV use
 * (in-flight tokens against the fleet mean), and is never less than what a sibling rank already carries (the
 * ranks of an instance decode in lockstep); the key pins only with {@code subagent_affinity_scope: both}.
 */
public final class AffinityRouter extends AbstractRouter implements PinKeeping {
  private final AffinityRouterSettings settings;
  private final long predictTtlNanos;
  private final RankQueues queues;
  private final LockstepSiblings siblings;
  private final LruMap<String, Candidate> pins;
  private final PredictOnRoute routed;
  private final ReportedProgress progress = new ReportedProgress();
  private final Map<Long, Routed> bySelection = new HashMap<>();

  /** A context selection's prefill work and uncached tokens, counted at its location until it is released. */
  private record Routed(double work, long uncached, int location) {}

  private record Prepared(PrefixMatches events, int[] routed) {}

  public AffinityRouter(RouterContext context, AffinityRouterSettings settings) {
    super(context);
    this.settings = settings;
    this.queues = new RankQueues(settings.rateWindowSeconds(), settings.maxKeys());
    this.siblings = new LockstepSiblings(this, settings.maxNumTokens(), queues, settings.siblingWaitEveryCall());
    this.pins = new LruMap<>(settings.maxKeys());
    this.predictTtlNanos = (long) (settings.predictTtlSeconds() * 1e9);
    this.routed = new PredictOnRoute(8, predictTtlNanos);
  }

  static AffinityRouter create(RouterContext context, RouterArgs args) {
    return new AffinityRouter(context, AffinityRouterSettings.of(context, args));
  }

  @Override
  public String type() {
    return "affinity";
  }

  @Override
  public void adoptPin(String key, Candidate candidate) {
    synchronized (lock) {
      pins.put(key, candidate);
    }
  }

  @Override
  public boolean releasePin(String key) {
    synchronized (lock) {
      return pins.remove(key) != null;
    }
  }

  @Override
  public int pinCount() {
    synchronized (lock) {
      return pins.size();
    }
  }

  /** The candidate a key is pinned to, or null. */
  public Candidate pinnedTo(String key) {
    synchronized (lock) {
      return pins.get(key);
    }
  }

  /** The generation variant weighs decode slots and in-flight tokens, never cached prefixes. */
  @Override
  public boolean usesKvEvents() {
    return context.fleet() == Fleet.CONTEXT;
  }

  @Override
  protected Object prepare(RoutingRequest request, List<Worker> candidates) {
    if (context.fleet() == Fleet.GENERATION) {
      return null;
    }
    routed.expire(context.nanoClock().getAsLong());
    PrefixMatches events = PrefixMatches.lookup(this, index, request, candidates);
    int[] predictedDepths = new int[0];
    if (request.hasTokens() && predictTtlNanos > 0 && !candidates.isEmpty()) {
      // the prediction is kept in the first candidate's hashing (one per fleet in practice)
      var info = candidates.get(0).info();
      long[] keys = request.blockKeys(info.hashAlgorithm(), info.tokensPerBlock());
      predictedDepths = routed.depths(keys, fullBlocks(request, info.tokensPerBlock()), index.locationCount());
    }
    return new Prepared(events, predictedDepths);
  }

  private static int fullBlocks(RoutingRequest r, int tokensPerBlock) {
    return Math.max(0, r.numTokens() - 1) / tokensPerBlock;
  }

  /** Prefill work of n new tokens after a prefix of p (token-equivalents). */
  private double work(long p, long n) {
    return n + settings.attentionFactor() * ((double) (p + n) * (p + n) - (double) p * p);
  }

  @Override
  protected Choice choose(RoutingRequest request, List<Worker> workers, Object prepared) {
    List<Candidate> cands = new ArrayList<>();
    for (Worker w : workers) {
      cands.addAll(candidatesOf(w));
    }
    boolean gen = context.fleet() == Fleet.GENERATION;
    long now = context.nanoClock().getAsLong();
    double[] cost = new double[cands.size()];
    int[] matched = new int[cands.size()];
    long totalRequests = 0;
    long totalTokens = 0;
    for (Candidate c : cands) {
      Load l = load(c);
      totalRequests += l.requests;
      totalTokens += l.tokens;
    }
    long n = request.numTokens();
    double meanTokens = (double) totalTokens / cands.size() + n + request.maxNewTokens();
    LockstepSiblings.Queued[] queued = gen ? null : queued(cands);
    double[] siblingGen = gen ? LockstepSiblings.onSiblings(cands, i -> {
      Load l = load(cands.get(i));
      return generationCost(cands.get(i), l.requests, l.tokens, meanTokens);
    }) : null;
    for (int i = 0; i < cands.size(); i++) {
      Candidate c = cands.get(i);
      Load l = load(c);
      if (gen) {
        // lockstep: a decode iteration of the instance lasts as long as its busiest rank's
        cost[i] = Math.max(siblingGen[i],
            generationCost(c, l.requests + 1, l.tokens + n + request.maxNewTokens(), meanTokens));
      } else {
        Prepared p = (Prepared) prepared;
        int loc = locationOf(c);
        matched[i] = Math.max(p.events().blocks(loc), loc < p.routed().length ? p.routed()[loc] : 0);
        long prefix = Math.min((long) matched[i] * c.worker().info().tokensPerBlock(), Math.max(0, n - 1));
        int chunk = siblings.chunkOf(c);
        double own = work(prefix, n - prefix);
        long iterations = LockstepSiblings.iterations(queued[i].uncached() + n - prefix, chunk);
        cost[i] = Math.max(queued[i].work() + own, siblings.siblingDelay(cands, queued, i, iterations))
            + Math.min(work(0, n),
                siblings.laterSiblingWaits(cands, queued, i, queues.ownRatePerWork(request.routingKey(), now)))
            + settings.evictionWeight() * evictedTokens(loc, n - prefix, c.worker().info().tokensPerBlock())
            + externality(cands, queued, i, own, LockstepSiblings.iterations(n - prefix, chunk), request.routingKey(),
                now);
      }
    }
    // Bounded load: no candidate above (1 + epsilon) x the mean after this request.
    double cap = Math.ceil((1 + settings.loadEpsilon()) * (totalRequests + 1) / cands.size());
    List<Integer> eligible = new ArrayList<>();
    for (int i = 0; i < cands.size(); i++) {
      Candidate c = cands.get(i);
      if (load(c).requests + 1 <= cap) {
        eligible.add(i);
      }
    }
    if (eligible.isEmpty()) {
      for (int i = 0; i < cands.size(); i++) {
        eligible.add(i);
      }
    }
    double minCost = Double.POSITIVE_INFINITY;
    for (int i : eligible) {
      minCost = Math.min(minCost, cost[i]);
    }
    double margin = gen ? settings.genPinMargin() : settings.pinMarginTokens();
    // New keys: rendezvous among near-equal candidates only (a cached prefix still wins).
    double tolerance = gen ? settings.genPinMargin() : settings.placementTolerance() * n;

    String key = request.routingKey();
    boolean useKey = key != null && (!gen || context.scope() == SubagentScope.BOTH);
    String own = gen ? null : softPlacementKey(request);
    int chosen;
    DecisionReason reason;
    if (useKey && own != null && !pins.containsKey(own)) {
      // Soft first placement: the root's (worker, rank) while it costs at most the margin more than the best; the
      // root's own pin is never moved by a sub-agent.
      Candidate root = pins.get(key);
      int at = root == null ? -1 : cands.indexOf(root);
      if (at >= 0 && eligible.contains(at) && cost[at] - minCost <= settings.softMargin() * n) {
        chosen = at;
        reason = DecisionReason.FOLLOWED_ROOT;
      } else {
        chosen = Rendezvous.choose(own, cands, eligible, cost, minCost + tolerance);
        reason = DecisionReason.NEW_PIN;
      }
      pins.put(own, cands.get(chosen));
    } else if (useKey) {
      key = own != null ? own : key;  // a sub-agent's later turns follow its own pin
      Candidate pinned = pins.get(key);
      int at = pinned == null ? -1 : cands.indexOf(pinned);
      if (pinned == null) {
        chosen = Rendezvous.choose(key, cands, eligible, cost, minCost + tolerance);
        reason = DecisionReason.NEW_PIN;
      } else if (at < 0) {
        chosen = Rendezvous.choose(key, cands, eligible, cost, minCost + tolerance);
        reason = DecisionReason.RE_PINNED;
      } else if (!eligible.contains(at) || cost[at] - minCost > margin) {
        chosen = cheapest(eligible, cost);
        reason = DecisionReason.PIN_BROKEN;
      } else {
        chosen = at;
        reason = DecisionReason.PINNED;
      }
      pins.put(key, cands.get(chosen));
    } else if (gen) {
      chosen = cheapest(eligible, cost);
      reason = DecisionReason.LOAD;
    } else {
      chosen = roomiest(cands, eligible, cost, minCost + tolerance);
      reason = matched[chosen] > 0 ? DecisionReason.PREFIX : DecisionReason.LOAD;
    }
    Candidate c = cands.get(chosen);
    return new Choice(c, matched[chosen], matched[chosen] * c.worker().info().tokensPerBlock(), reason);
  }

  /**
   * The sub-agent's own id when soft first placement applies to the request: on, a sub-agent (an affinity id) with
   * an own conversation id other than the key it is routed by; else null.
   */
  private String softPlacementKey(RoutingRequest request) {
    String own = request.conversationId();
    if (settings.softMargin() < 0 || request.affinityId() == null || own == null || own.equals(request.routingKey())) {
      return null;
    }
    return own;
  }

  /**
   * The cached tokens that writing {@code written} tokens at a location evicts: those beyond its free blocks, once
   * its capacity is known ({@link dev.affinity.kv.PrefixIndex#capacity}); 0 before that (it has not been full).
   */
  private long evictedTokens(int location, long written, int tokensPerBlock) {
    long capacity = index.capacity(location);
    if (capacity == 0 || settings.evictionWeight() == 0) {
      return 0;
    }
    long free = Math.max(0, capacity - index.size(location)) * tokensPerBlock;
    return Math.max(0, written - free);
  }

  /** The weighted queueing externality of candidate {@code i} ({@link LockstepSiblings#externality}); 0 when off. */
  private double externality(List<Candidate> cands, LockstepSiblings.Queued[] queued, int i, double own,
      long ownIterations, String key, long now) {
    double weight = settings.externalityWeight();
    return weight == 0 ? 0 : weight * siblings.externality(cands, queued, i, own, ownIterations, key, now);
  }

  /**
   * Per candidate, the prefill queued there still to do: what was routed there and not released, less what its rank
   * reports it computed of this router's prefills ({@code queued_work: reported}, {@link ReportedProgress}); whole
   * where the rank does not report it, or with {@code queued_work: routed}.
   */
  private LockstepSiblings.Queued[] queued(List<Candidate> cands) {
    LockstepSiblings.Queued[] queued = new LockstepSiblings.Queued[cands.size()];
    for (int i = 0; i < queued.length; i++) {
      Candidate c = cands.get(i);
      Load l = load(c);
      long count = l.work > 0 ? computedTokens(c) : -1;
      if (count < 0) {
        queued[i] = new LockstepSiblings.Queued(l.work, l.uncached);
      } else {
        // other frontends' prefills there (their load shares) stay whole and the count goes to this router's first:
        // the total left is the same while the count stays within this router's own uncached tokens there
        ReportedProgress.Remaining r = progress.remaining(locationOf(c), count, this::work);
        queued[i] = new LockstepSiblings.Queued(Math.max(0, l.work - r.routedWork() + r.work()),
            Math.max(0, l.uncached - r.routedUncached() + r.uncached()));
      }
    }
    return queued;
  }

  /**
   * The prompt tokens candidate {@code c}'s rank reports it has computed ({@code queued_work: reported}), or -1: off,
   * no visible rank, or a worker that does not report it (stock workers over HTTP).
   */
  private long computedTokens(Candidate c) {
    if (!settings.queuedWorkReported() || c.rank() < 0) {
      return -1;
    }
    KvCacheStats s = c.worker().kvCacheStats(c.rank());
    return s == null ? -1 : s.contextTokensComputed();
  }

  /** A generation candidate's load: decode slots in use and KV tokens against the fleet's mean. */
  private double generationCost(Candidate c, double requests, double tokens, double meanTokens) {
    return settings.slotWeight() * requests / c.worker().info().maxBatchSize()
        + settings.kvWeight() * tokens / meanTokens;
  }

  /**
   * A request without a routing key: among the eligible candidates costing at most {@code limit}, the one with
   * the fewest blocks cached (the most room for the blocks it adds: near-equal costs should not starve a rank
   * whose cache never got the shared first blocks), ties to the cheaper, then in turn.
   */
  private int roomiest(List<Candidate> cands, List<Integer> eligible, double[] cost, double limit) {
    long fewest = Long.MAX_VALUE;
    List<Integer> tied = new ArrayList<>();
    for (int i : eligible) {
      if (cost[i] > limit) {
        continue;
      }
      long cached = index.size(locationOf(cands.get(i)));
      if (cached < fewest) {
        fewest = cached;
        tied.clear();
      }
      if (cached == fewest) {
        tied.add(i);
      }
    }
    return cheapest(tied, cost);
  }

  private int cheapest(List<Integer> eligible, double[] cost) {
    double best = Double.POSITIVE_INFINITY;
    List<Integer> tied = new ArrayList<>();
    for (int i : eligible) {
      if (cost[i] < best) {
        best = cost[i];
        tied.clear();
      }
      if (cost[i] == best) {
        tied.add(i);
      }
    }
    return pickTied(tied);
  }

  @Override
  protected void onSelected(Selection s) {
    if (context.fleet() == Fleet.GENERATION) {
      return;
    }
    RoutingRequest r = s.request();
    long n = r.numTokens();
    long prefix = Math.min(s.matchedTokens(), Math.max(0, n - 1));
    double w = work(prefix, n - prefix);
    Load l = load(s.candidate());
    l.work += w;
    l.uncached += n - prefix;
    int loc = locationOf(s.candidate());
    bySelection.put(s.id(), new Routed(w, n - prefix, loc));
    long count = computedTokens(s.candidate());
    if (count >= 0) {
      progress.routed(loc, s.id(), prefix, n - prefix, count);
    }
    queues.arrived(loc, r.routingKey(), work(0, n), context.nanoClock().getAsLong());
    int tpb = s.worker().info().tokensPerBlock();
    long[] keys = r.blockKeys(s.worker().info().hashAlgorithm(), tpb);
    routed.routed(s.candidate(), loc, keys, fullBlocks(r, tpb), context.nanoClock().getAsLong());
  }

  @Override
  public List<RoutedShare> routedSince() {
    synchronized (lock) {
      return routed.drain();
    }
  }

  @Override
  public void peerRouted(List<RoutedShare> shares) {
    long now = context.nanoClock().getAsLong();
    synchronized (lock) {
      for (RoutedShare share : shares) {
        Candidate c = knownCandidate(share.workerId(), share.rank());
        if (c != null) {
          routed.peer(locationOf(c), share.keys(), now);
        }
      }
    }
  }

  @Override
  protected void onReleased(Selection s, Outcome outcome) {
    Routed r = bySelection.remove(s.id());
    if (r != null) {
      Load l = load(s.candidate());
      l.work -= r.work();
      l.uncached -= r.uncached();
      queues.completed(r.location(), r.work(), context.nanoClock().getAsLong());
      progress.released(r.location(), s.id(), computedTokens(s.candidate()));
    }
    if (outcome == Outcome.SUCCESS && settings.trackRoutedBlocks() && context.fleet() == Fleet.CONTEXT) {
      backfill(s);
    }
  }

  @Override
  protected double[] ownRates(Candidate c) {
    return queues.own(locationOf(c), context.nanoClock().getAsLong());
  }

  /** The peers' requests, arrivals and completed work at a candidate enter its rates ({@link RankQueues#peers}). */
  @Override
  protected void onPeerShare(Candidate c, int requests, double arrivals, double doneWork) {
    queues.peers(locationOf(c), requests, arrivals, doneWork, context.nanoClock().getAsLong());
  }

  /** Removed blocks end their predictions at that location: KV events are the truth once they arrive. */
  @Override
  protected void onBlocksRemoved(int location, long[] keys) {
    routed.removed(location, keys);
  }

  @Override
  protected void onCacheCreated(int location) {
    routed.cleared(location);
    progress.forget(location);
  }

  @Override
  protected void onWorkerRemoved(String workerId) {
    pins.values().removeIf(c -> c.workerId().equals(workerId));
  }
}
