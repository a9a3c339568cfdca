package dev.affinity.routing;

import dev.affinity.executor.KvEvent;
import dev.affinity.kv.KvEventApplier;
import dev.affinity.kv.PrefixIndex;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerInfo;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What every router shares: the worker list, per-candidate load, the selection lifecycle (exactly
 * once release, TTL expiry, counters), KV event ingestion and backfill. Subclasses decide in
 * {@link #choose} and keep their own state in the hooks; all hooks run under one lock per router,
 * while block hashing and index lookups happen before it is taken.
 */
public abstract class AbstractRouter implements Router {
  private static final Logger log = LoggerFactory.getLogger(AbstractRouter.class);
  private static final long SWEEP_INTERVAL_NANOS = 1_000_000_000L;

  protected final RouterContext context;
  protected final PrefixIndex index;
  /** Guards routing state: the worker list, loads and every subclass structure. */
  protected final Object lock = new Object();
  private final Map<String, Worker> workers = new LinkedHashMap<>();
  private volatile List<Worker> workerSnapshot = List.of();
  private final ConcurrentHashMap<Long, Selection> outstanding = new ConcurrentHashMap<>();
  private final AtomicLong nextSelectionId = new AtomicLong(1);
  private final AtomicLong expired = new AtomicLong();
  private final AtomicLong doubleReleases = new AtomicLong();
  private final Map<DecisionReason, LongAdder> decisions = new EnumMap<>(DecisionReason.class);
  private final Map<NoWorkerAvailableException.Reason, LongAdder> unavailable =
      new EnumMap<>(NoWorkerAvailableException.Reason.class);
  private final KvEventIngest kvIngest;
  private final CandidateSets candidateSets;
  private final RouterLoads loads;
  /** Where other frontends' reported work goes (the loads routed on, and the subclass's rates). */
  private final PeerLoads.Target peerTarget = this::addPeerLoad;
  private volatile long lastSweepNanos;
  private long rrCounter;

  /** In-flight work at one candidate (or, keyed by worker id alone, at a whole worker). */
  protected static final class Load {
    public int requests;
    public long tokens;
    /** Expected prefill work queued there (router-specific units). */
    public double work;
    /** Uncached prompt tokens queued there (the routers that count prefill work). */
    public long uncached;
  }

  /** A subclass's decision. */
  protected record Choice(Candidate candidate, int matchedBlocks, int matchedTokens, DecisionReason reason) {}

  protected AbstractRouter(RouterContext context) {
    this.context = Objects.requireNonNull(context, "context");
    this.index = context.prefixIndex();
    this.candidateSets = new CandidateSets(index);
    this.loads = new RouterLoads(candidateSets);
    this.kvIngest = new KvEventIngest(index, new KvEventApplier.Listener() {
      @Override
      public void removed(int location, long[] keys) {
        onBlocksRemoved(location, keys);
      }

      @Override
      public void cleared(int location) {
        onCacheCreated(location);
      }
    });
    for (NoWorkerAvailableException.Reason r : NoWorkerAvailableException.Reason.values()) {
      unavailable.put(r, new LongAdder());
    }
    for (DecisionReason r : DecisionReason.values()) {
      decisions.put(r, new LongAdder());
    }
    this.lastSweepNanos = context.nanoClock().getAsLong();
  }

  // ---- Subclass hooks (under lock unless noted) ----

  /**
   * Picks among the live, non-excluded workers (never empty). {@code prepared} is what
   * {@link #prepare} returned.
   */
  protected abstract Choice choose(RoutingRequest request, List<Worker> candidates, Object prepared);

  /** Before the lock: precompute what {@link #choose} needs (block keys, index lookups). */
  protected Object prepare(RoutingRequest request, List<Worker> candidates) {
    return null;
  }

  protected void onSelected(Selection selection) {}

  protected void onReleased(Selection selection, Outcome outcome) {}

  protected void onWorkerAdded(Worker worker) {}

  protected void onWorkerRemoved(String workerId) {}

  // ---- Router ----

  @Override
  public final Selection select(RoutingRequest request, Set<String> excludedWorkerIds) {
    Objects.requireNonNull(request, "request");
    Set<String> excluded = excludedWorkerIds == null ? Set.of() : excludedWorkerIds;
    sweepExpired();
    List<Worker> candidates = new ArrayList<>();
    List<Worker> known = workerSnapshot;
    int dead = 0;
    for (Worker w : known) {
      if (!w.isAlive()) {
        dead++;
      } else if (!excluded.contains(w.id())) {
        candidates.add(w);
      }
    }
    if (candidates.isEmpty()) {
      throw unavailable(NoWorkerAvailableException.of(context.fleet(), known.size(), dead, known.size() - dead));
    }
    Object prepared = prepare(request, candidates);
    Selection s;
    synchronized (lock) {
      candidates.removeIf(w -> !workers.containsKey(w.id()));  // removed meanwhile
      if (candidates.isEmpty()) {
        throw unavailable(NoWorkerAvailableException.of(context.fleet(), known.size(), 0, 0));
      }
      Choice c = choose(request, candidates, prepared);
      long deadline = context.nanoClock().getAsLong() + context.selectionTtl().toNanos();
      s = new Selection(nextSelectionId.getAndIncrement(), request, c.candidate(), c.matchedBlocks(),
          c.matchedTokens(), c.reason(), deadline, this);
      loads.add(c.candidate(), request, +1);
      onSelected(s);
      outstanding.put(s.id(), s);
    }
    decisions.get(s.reason()).increment();
    return s;
  }

  private NoWorkerAvailableException unavailable(NoWorkerAvailableException e) {
    unavailable.get(e.reason()).increment();
    return e;
  }

  final void release(Selection s, Outcome outcome) {
    if (outstanding.remove(s.id()) == null) {
      return;
    }
    if (outcome == Outcome.EXPIRED) {
      expired.incrementAndGet();
      log.warn("selection {} ({}) was never released; expired after {}", s.id(), s.candidate(), context.selectionTtl());
    }
    synchronized (lock) {
      loads.add(s.candidate(), s.request(), -1);
      onReleased(s, outcome);
    }
  }

  final void noteDoubleRelease(Selection s, Outcome outcome) {
    doubleReleases.incrementAndGet();
    log.warn("selection {} ({}) released again with {}: ignored", s.id(), s.candidate(), outcome);
  }

  /** Expires selections past their TTL; runs at most once a second, from select(). */
  public final void sweepExpired() {
    long now = context.nanoClock().getAsLong();
    if (now - lastSweepNanos < SWEEP_INTERVAL_NANOS) {
      return;
    }
    lastSweepNanos = now;
    for (Selection s : outstanding.values()) {
      if (now - s.deadlineNanos() > 0) {
        s.expire();
      }
    }
  }

  @Override
  public final void addWorker(Worker worker) {
    synchronized (lock) {
      if (workers.putIfAbsent(worker.id(), worker) == null) {
        workerSnapshot = List.copyOf(workers.values());
        onWorkerAdded(worker);
      }
    }
  }

  /**
   * Removes a worker: its outstanding selections are released now (their owners' later release is a quiet
   * no-op), so its load stops counting, and the keys pinned to it move on their next request.
   */
  @Override
  public final void removeWorker(String workerId) {
    synchronized (lock) {
      loads.forgetPeersAt(workerId, peerTarget);
      Worker removed = workers.remove(workerId);
      if (removed != null) {
        workerSnapshot = List.copyOf(workers.values());
        releaseSelectionsOf(workerId);
        candidateSets.remove(removed);
        onWorkerRemoved(workerId);
        loads.dropWorker(workerId);
      }
    }
    index.clearWorker(workerId);
    kvIngest.forget(workerId);
  }

  /** Releases (as cancelled) every outstanding selection of a worker; returns how many. */
  private int releaseSelectionsOf(String workerId) {
    int n = 0;
    for (Selection s : outstanding.values()) {
      if (s.candidate().workerId().equals(workerId) && s.detach()) {
        n++;
      }
    }
    if (n > 0) {
      log.info("worker {} removed with {} selections outstanding: released", workerId, n);
    }
    return n;
  }

  @Override
  public final List<Worker> workers() {
    return workerSnapshot;
  }

  @Override
  public void onKvEvents(String workerId, List<KvEvent> events) {
    if (!usesKvEvents()) {
      return;
    }
    Worker w;
    synchronized (lock) {
      w = workers.get(workerId);
    }
    if (w != null) {
      kvIngest.apply(workerId, w.info().ranksVisible(), events);
    }
  }

  /** A location's KV events said these blocks were removed (after the index applied them). */
  protected void onBlocksRemoved(int location, long[] keys) {}

  /** A location's KV cache was (re)created empty (after the index applied it). */
  protected void onCacheCreated(int location) {}

  @Override
  public final RouterStats stats() {
    Map<DecisionReason, Long> d = new EnumMap<>(DecisionReason.class);
    decisions.forEach((k, v) -> d.put(k, v.sum()));
    RouterStats.KvIngest kv = kvIngest.snapshot();
    Map<NoWorkerAvailableException.Reason, Long> u = new EnumMap<>(NoWorkerAvailableException.Reason.class);
    unavailable.forEach((k, v) -> u.put(k, v.sum()));
    return new RouterStats(type(), workerSnapshot.size(), outstanding.size(), expired.get(), doubleReleases.get(), d, kv,
        u);
  }

  @Override
  public final long cacheCapacityTokens(String workerId, int rank) {
    Worker w;
    synchronized (lock) {
      w = workers.get(workerId);
    }
    if (w == null) {
      return 0;
    }
    return index.capacity(index.location(workerId, w.info().ranksVisible() ? Math.max(0, rank) : -1))
        * w.info().tokensPerBlock();
  }

  @Override
  public final List<CandidateLoad> loads() {
    synchronized (lock) {
      return loads.perCandidate(workerSnapshot);
    }
  }

  @Override
  public final List<LoadShare> ownLoads() {
    synchronized (lock) {
      return loads.own(workerSnapshot, this::ownRates);
    }
  }

  @Override
  public final void peerLoads(String peerId, List<LoadShare> shares) {
    synchronized (lock) {
      List<LoadShare> known = new ArrayList<>(shares.size());
      for (LoadShare s : shares) {
        if (knownCandidate(s.workerId(), s.rank()) != null) {
          known.add(s);
        }
      }
      loads.replacePeer(peerId, known, peerTarget);
    }
  }

  @Override
  public final void forgetPeer(String peerId) {
    synchronized (lock) {
      loads.forgetPeer(peerId, peerTarget);
    }
  }

  /**
   * The candidate a peer names by worker id and rank, or null when this router does not have that worker or the rank
   * does not fit it (ranks visible: 0 to num_ranks - 1; else -1). Under the lock.
   */
  protected final Candidate knownCandidate(String workerId, int rank) {
    Worker w = workers.get(workerId);
    if (w == null || !(w.info().ranksVisible() ? rank >= 0 && rank < w.info().numRanks() : rank == -1)) {
      return null;
    }
    return candidatesOf(w).get(Math.max(0, rank));
  }

  /** A peer's share changes the load of its candidate, and of its worker as a whole, as a selection does. */
  private void addPeerLoad(LoadShare s, int sign) {
    Worker w = workers.get(s.workerId());
    if (w != null) {
      Candidate c = loads.addPeer(w, s, sign);
      onPeerShare(c, sign * s.requests(), sign * s.arrivals(), sign * s.doneWork());
    }
  }

  /**
   * This frontend's own measured rates at a candidate, for its load report: the decaying count of its requests there
   * and the work they completed there ({@link LoadShare#arrivals}, {@link LoadShare#doneWork}); zeros for a router
   * that measures none. Called under the lock.
   */
  protected double[] ownRates(Candidate c) {
    return NO_RATES;
  }

  private static final double[] NO_RATES = new double[2];

  /**
   * The peers' share at a candidate changed by these amounts (a report replaced, a peer expired): requests in flight,
   * arrivals and done work as {@link #ownRates} measures them. Under the lock; the loads are already updated.
   */
  protected void onPeerShare(Candidate c, int requests, double arrivals, double doneWork) {}

  // ---- Helpers for subclasses (call under lock) ----

  /** Load of a whole worker. */
  protected final Load load(String workerId) {
    return loads.worker(workerId);
  }

  /** Load of one candidate: a rank of a worker, or the whole worker when ranks are not visible. */
  protected final Load load(Candidate c) {
    return loads.at(c);
  }

  /** The candidates of a worker: one per visible rank, or the worker itself (rank -1). */
  protected final List<Candidate> candidatesOf(Worker w) {
    return candidateSets.candidates(w);
  }

  /** Prefix-index locations of a worker's candidates, in the order of {@link #candidatesOf}. */
  final int[] locationsOf(Worker w) {
    return candidateSets.locations(w);
  }

  /** The prefix-index location of a candidate. */
  protected final int locationOf(Candidate c) {
    return candidateSets.location(c);
  }

  /** The least loaded rank of a worker (requests, then tokens; ties round-robin); rank -1 if not visible. */
  protected final Candidate leastLoadedRank(Worker w) {
    return loads.leastLoaded(w);
  }

  /** Round-robin tie break among equally good options. */
  protected final <T> T pickTied(List<T> tied) {
    return tied.get((int) Math.floorMod(rrCounter++, (long) tied.size()));
  }

  /** Records the request's routed blocks at the candidate (backfill after a successful request). */
  protected final void backfill(Selection s) {
    WorkerInfo info = s.worker().info();
    long[] keys = s.request().blockKeys(info.hashAlgorithm(), info.tokensPerBlock());
    if (keys.length > 0) {
      index.store(locationOf(s.candidate()), keys);
    }
  }
}
