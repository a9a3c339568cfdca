package dev.affinity.server.cluster;

import dev.affinity.executor.KvEvent;
import dev.affinity.routing.Candidate;
import dev.affinity.routing.Outcome;
import dev.affinity.routing.PinKeeping;
import dev.affinity.routing.Router;
import dev.affinity.routing.RouterStats;
import dev.affinity.routing.RoutingRequest;
import dev.affinity.routing.Selection;
import dev.affinity.worker.Worker;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.function.Predicate;

/**
 * A pin-keeping router ({@code conversation}, {@code affinity}) whose pins agree with the other frontends'
 * ({@link SharedPins}). Before a keyed request is routed, the router adopts the shared pin when its worker is
 * in this router; after, a pin the router made or moved is written to etcd (put-if-absent, or compare-and-swap
 * on the revision it replaces). When another frontend won, the request is routed again to the winner's choice
 * (the first selection is released as cancelled). Requests without a key are the router's alone.
 *
 * <p>A frontend never moves a shared pin because it is behind: when the pinned worker is registered in the
 * cluster ({@code registered}) but not yet prepared here, the request goes where this router chooses and the
 * shared pin stays; once the worker has joined, the key's next request goes back to it. A pin moves only
 * when its worker is gone, dead or excluded here, or when the router's own rules move it.
 */
public final class PinSharingRouter implements Router, PinKeeping {
  private final Router delegate;
  private final PinKeeping pinKeeping;
  private final SharedPins pins;
  private final Predicate<String> registered;
  private final Executor releases;

  /**
   * @param registered whether a worker (its id, host:port) is registered in the cluster: its key is live
   */
  public PinSharingRouter(Router delegate, SharedPins pins, Predicate<String> registered) {
    this(delegate, pins, registered, Runnable::run);
  }

  /**
   * @param releases where a released pin is deleted in etcd (off the caller's thread in the server)
   */
  public PinSharingRouter(Router delegate, SharedPins pins, Predicate<String> registered, Executor releases) {
    if (!(delegate instanceof PinKeeping p)) {
      throw new IllegalArgumentException(delegate.type() + " does not pin keys; only conversation and affinity share pins");
    }
    this.delegate = delegate;
    this.pinKeeping = p;
    this.pins = pins;
    this.registered = registered;
    this.releases = releases;
    pins.onDelete(p::releasePin); // released on another frontend, or expired in etcd
  }

  @Override
  public void adoptPin(String key, Candidate candidate) {
    pinKeeping.adoptPin(key, candidate);
  }

  /** Releases the pin here at once, and in etcd on the release executor (every frontend then forgets it). */
  @Override
  public boolean releasePin(String key) {
    boolean had = pinKeeping.releasePin(key);
    releases.execute(() -> pins.release(key));
    return had;
  }

  @Override
  public int pinCount() {
    return pinKeeping.pinCount();
  }

  /** Whether a router can share pins. */
  public static boolean supports(Router r) {
    return r instanceof PinKeeping;
  }

  @Override
  public Selection select(RoutingRequest request, Set<String> excludedWorkerIds) {
    String key = request.routingKey();
    if (key == null) {
      return delegate.select(request, excludedWorkerIds);
    }
    SharedPins.Pin shared = pins.get(key);
    Candidate sharedHere = shared == null ? null : candidate(shared, excludedWorkerIds);
    if (sharedHere != null) {
      pinKeeping.adoptPin(key, sharedHere);
    }
    Selection s = delegate.select(request, excludedWorkerIds);
    if (shared != null && sharedHere == null && !known(shared.worker()) && registered.test(shared.worker())) {
      return s; // the pinned worker is not prepared here yet: this turn only goes elsewhere
    }
    SharedPins.Pin chosen = new SharedPins.Pin(s.worker().id(), s.rank(), 0);
    if (chosen.samePlace(shared)) {
      return s;
    }
    Optional<SharedPins.Pin> winner = pins.place(key, shared, chosen.worker(), chosen.rank());
    if (winner.isEmpty() || winner.get().samePlace(chosen)) {
      return s; // placed (or etcd is unreachable: this frontend's own choice)
    }
    Candidate theirs = candidate(winner.get(), excludedWorkerIds);
    if (theirs == null) {
      return s; // the winner's worker is not usable from here (yet)
    }
    pinKeeping.adoptPin(key, theirs);
    Selection adopted = delegate.select(request, excludedWorkerIds);
    s.release(Outcome.CANCELLED);
    return adopted;
  }

  private boolean known(String workerId) {
    for (Worker w : delegate.workers()) {
      if (w.id().equals(workerId)) {
        return true;
      }
    }
    return false;
  }

  /** The candidate a pin names, when its worker is in this router, alive and not excluded. */
  private Candidate candidate(SharedPins.Pin pin, Set<String> excluded) {
    if (excluded != null && excluded.contains(pin.worker())) {
      return null;
    }
    for (Worker w : delegate.workers()) {
      if (w.id().equals(pin.worker()) && w.isAlive()) {
        int ranks = w.info().ranksVisible() ? w.info().numRanks() : 0;
        int rank = pin.rank() >= 0 && pin.rank() < ranks ? pin.rank() : -1;
        if (ranks > 0 && rank < 0) {
          return null;
        }
        return new Candidate(w, rank);
      }
    }
    return null;
  }

  @Override
  public String type() {
    return delegate.type();
  }

  @Override
  public void addWorker(Worker worker) {
    delegate.addWorker(worker);
  }

  @Override
  public void removeWorker(String workerId) {
    delegate.removeWorker(workerId);
  }

  @Override
  public List<Worker> workers() {
    return delegate.workers();
  }

  @Override
  public List<dev.affinity.routing.CandidateLoad> loads() {
    return delegate.loads();
  }

  @Override
  public List<dev.affinity.routing.LoadShare> ownLoads() {
    return delegate.ownLoads();
  }

  @Override
  public void peerLoads(String peerId, List<dev.affinity.routing.LoadShare> shares) {
    delegate.peerLoads(peerId, shares);
  }

  @Override
  public void forgetPeer(String peerId) {
    delegate.forgetPeer(peerId);
  }

  @Override
  public List<dev.affinity.routing.RoutedShare> routedSince() {
    return delegate.routedSince();
  }

  @Override
  public void peerRouted(List<dev.affinity.routing.RoutedShare> shares) {
    delegate.peerRouted(shares);
  }

  @Override
  public void onKvEvents(String workerId, List<KvEvent> events) {
    delegate.onKvEvents(workerId, events);
  }

  @Override
  public boolean usesKvEvents() {
    return delegate.usesKvEvents();
  }

  @Override
  public long cacheCapacityTokens(String workerId, int rank) {
    return delegate.cacheCapacityTokens(workerId, rank);
  }

  @Override
  public RouterStats stats() {
    return delegate.stats();
  }
}
