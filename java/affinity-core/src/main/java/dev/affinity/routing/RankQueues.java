package dev.affinity.routing;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a router measures of each prefix-index location's (worker, rank) queue, to price the wait a placement
 * imposes on the requests that come after it: the sessions (routing keys) that send there and how often each does,
 * the rate of requests without a key, and the fleet's time per unit of prefill work (how long a rank is busy per
 * token-equivalent it completes). Rates are exponentially decaying averages over {@code window} (a count decayed by
 * {@code e^(-age / window)}, so a steady stream of rate {@code r} reads {@code r}); a rank is busy from the moment it
 * has outstanding work until its last completion.
 *
 * <p>Behind several frontends ({@code affinity.shared_state}) each sees only its own share of the traffic; the others'
 * arrivals, completed work and requests in flight at each location come with their load reports ({@link #peers}). A
 * location is then busy while any frontend has work there, the time per unit of work divides that busy time by the
 * work every frontend completed, a location's request rate is the fleet's, and a session's rate is what this frontend
 * sees of it scaled by the fleet's arrivals at its location over this frontend's own (a load balancer spreads each
 * session's calls over the frontends alike). With no peer every figure is this frontend's own, as before. Not
 * thread-safe: the router calls it under its lock.
 */
final class RankQueues {
  private final double windowNanos;
  private final long maxKeys;
  private double[] arrivals = new double[0];
  private long[] stamp = new long[0];
  private int[] outstanding = new int[0];
  private long[] busyMark = new long[0];
  private boolean[] seen = new boolean[0];
  /** This frontend's completed work per location, decayed with {@link #arrivals} (what it reports to peers). */
  private double[] done = new double[0];
  /** The peers' latest reports per location: their arrivals and requests in flight; and their completed work in all. */
  private double[] peerArrivals = new double[0];
  private int[] peerOutstanding = new int[0];
  private double peerDoneTotal;
  private final List<List<KeyRate>> keysAt = new ArrayList<>();
  private final LinkedHashMap<String, KeyRate> keys = new LinkedHashMap<>(16, 0.75f, true);
  /** Busy time and completed work of every location, decayed together (nanoseconds, work units). */
  private double busyNanos;
  private double doneWork;
  private long fleetStamp;
  private boolean fleetStamped;

  /** One routing key's decaying request count at the location it last went to, and what moving it would cost. */
  private static final class KeyRate {
    final String key;
    double count;
    long stamp;
    int location = -1;
    /** The work of prefilling its latest prompt from nothing: what leaving its location costs it. */
    double moveWork;

    KeyRate(String key) {
      this.key = key;
    }
  }

  RankQueues(double windowSeconds, long maxKeys) {
    if (!(windowSeconds > 0)) {
      throw new IllegalArgumentException("window must be > 0 seconds, got " + windowSeconds);
    }
    this.windowNanos = windowSeconds * 1e9;
    this.maxKeys = maxKeys;
  }

  /**
   * A request ({@code key}: its routing key, or null) was routed to {@code loc}; {@code moveWork}: the work of
   * prefilling its whole prompt elsewhere.
   */
  void arrived(int loc, String key, double moveWork, long now) {
    grow(loc, now);
    decay(loc, now);
    arrivals[loc] += 1;
    if (outstanding[loc]++ == 0 && peerOutstanding[loc] <= 0) {
      busyMark[loc] = now;
    }
    if (key != null) {
      keyArrived(key, loc, now).moveWork = moveWork;
    }
  }

  /** A request routed to {@code loc} with {@code w} units of work completed there (or ended). */
  void completed(int loc, double w, long now) {
    grow(loc, now);
    decayFleet(now);
    if (outstanding[loc] > 0) {
      busyNanos += Math.max(0, now - busyMark[loc]);
      doneWork += w;
      decay(loc, now);
      done[loc] += w;
      busyMark[loc] = now;
      outstanding[loc]--;
    }
  }

  /**
   * The peers' share at {@code loc} changed by these amounts (a report replaced or expired): their requests in flight
   * there, their decaying arrival count and completed work there.
   */
  void peers(int loc, int requests, double arrivalsDelta, double doneDelta, long now) {
    grow(loc, now);
    decayFleet(now);
    boolean busyBefore = outstanding[loc] + peerOutstanding[loc] > 0;
    peerOutstanding[loc] += requests;
    peerArrivals[loc] += arrivalsDelta;
    peerDoneTotal += doneDelta;
    boolean busyAfter = outstanding[loc] + peerOutstanding[loc] > 0;
    if (!busyBefore && busyAfter) {
      busyMark[loc] = now;
    } else if (busyBefore && !busyAfter) {
      busyNanos += Math.max(0, now - busyMark[loc]);
      busyMark[loc] = now;
    }
  }

  /** This frontend's own decaying arrival count and completed work at {@code loc} (its load report). */
  double[] own(int loc, long now) {
    if (loc >= seen.length || !seen[loc]) {
      return new double[2];
    }
    decay(loc, now);
    return new double[] {arrivals[loc], done[loc]};
  }

  /** Seconds a rank spends per unit of work it completes; 0 until a completion was measured. */
  double secondsPerWork() {
    double fleetDone = doneWork + Math.max(0, peerDoneTotal);
    return fleetDone > 0 ? busyNanos / 1e9 / fleetDone : 0;
  }

  /**
   * How many times this frontend's own arrivals at {@code loc} the fleet's are (1 alone, or with none of its own there):
   * what a session's count here is scaled by to read its fleet-wide rate.
   */
  private double scale(int loc) {
    return arrivals[loc] > LoadShare.NEGLIGIBLE ? (arrivals[loc] + Math.max(0, peerArrivals[loc])) / arrivals[loc] : 1;
  }

  /**
   * The wait that {@code delay} units of work put on the requests of other sessions that come to {@code loc} within
   * {@code window} units of work from now, in units of work. Each session sending there (other than {@code self}) has
   * one call in flight at a time, so it comes at most once in the window (with probability {@code min(1, its rate x
   * window)}), and waits at most as long as leaving costs it: a session the delay would hold up longer than
   * prefilling its whole context elsewhere moves instead (which the router lets it do). Requests without a key arrive
   * as a Poisson stream of the location's remaining rate and wait the whole delay. Rates are per unit of work (per
   * second x the measured seconds per unit of work). 0 until a completion was measured.
   */
  double delayedWork(int loc, String self, double window, double delay, long now) {
    return delayed(loc, self, window, delay, now, false);
  }

  /**
   * The wait that {@code delay} units of work on each call put on the sessions that send to {@code loc} within
   * {@code window} units of work from now, in units of work, where each call is served after that wait (a lockstep
   * sibling's iteration): a session comes back after each answer, so it is delayed at each of its calls in the window
   * ({@code its rate x window} of them), but in all no longer than leaving costs it. Requests without a key arrive as
   * a Poisson stream of the location's remaining rate, each delayed once. 0 until a completion was measured.
   */
  double delayedCalls(int loc, String self, double window, double delay, long now) {
    return delayed(loc, self, window, delay, now, true);
  }

  /** {@link #delayedWork} ({@code everyCall} false) and {@link #delayedCalls} (true). */
  private double delayed(int loc, String self, double window, double delay, long now, boolean everyCall) {
    if (loc >= seen.length || !seen[loc]) {
      return 0;
    }
    double perWork = ratePerWorkOfOneCount();
    if (perWork == 0) {
      return 0;
    }
    decay(loc, now);
    // the sessions this frontend sees here, scaled to the fleet's rate at this location
    double scale = scale(loc);
    double waits = 0;
    double keyed = 0;
    for (KeyRate k : keysAt(loc)) {
      double count = decayed(k, now) * scale;
      keyed += count;
      if (!k.key.equals(self)) {
        double calls = count * perWork * window;
        waits += everyCall ? Math.min(calls * delay, k.moveWork) : Math.min(1, calls) * Math.min(delay, k.moveWork);
      }
    }
    double keyless = Math.max(0, arrivals[loc] + Math.max(0, peerArrivals[loc]) - keyed);
    return waits + keyless * perWork * window * delay;
  }

  /**
   * How many requests {@code key} sends per unit of work a rank does (its decaying request count over the window,
   * per second, times the measured seconds per unit of work): 0 for an unknown key or before any completion.
   */
  double ownRatePerWork(String key, long now) {
    KeyRate k = key == null ? null : keys.get(key);
    if (k == null) {
      return 0;
    }
    if (k.location >= 0) {
      decay(k.location, now);
    }
    return decayed(k, now) * (k.location >= 0 ? scale(k.location) : 1) * ratePerWorkOfOneCount();
  }

  /** A decayed request count over the window as a rate per unit of work: per second, times seconds per unit of work. */
  private double ratePerWorkOfOneCount() {
    return secondsPerWork() / (windowNanos / 1e9);
  }

  /** Forgets a location (a worker removed, a cache recreated): its rates start again from nothing. */
  void forget(int loc) {
    if (loc < arrivals.length) {
      arrivals[loc] = 0;
      done[loc] = 0;
    }
  }

  private KeyRate keyArrived(String key, int loc, long now) {
    KeyRate k = keys.get(key);
    if (k == null) {
      k = new KeyRate(key);
      keys.put(key, k);
      if (keys.size() > maxKeys) {
        Iterator<Map.Entry<String, KeyRate>> it = keys.entrySet().iterator();
        KeyRate eldest = it.next().getValue();
        it.remove();
        if (eldest.location >= 0) {
          keysAt(eldest.location).remove(eldest);
        }
      }
    }
    if (k.location != loc) {
      if (k.location >= 0) {
        // its requests there were its own: they leave with it
        keysAt(k.location).remove(k);
        decay(k.location, now);
        arrivals[k.location] = Math.max(0, arrivals[k.location] - decayed(k, now));
      }
      k.location = loc;
      k.count = 0;
      keysAt(loc).add(k);
    } else {
      k.count = decayed(k, now);
    }
    k.count += 1;
    k.stamp = now;
    // keys whose rate has faded out leave the location's list
    KeyRate current = k;
    keysAt(loc).removeIf(x -> x != current && decayed(x, now) < 0.01 && drop(x));
    return k;
  }

  private boolean drop(KeyRate k) {
    keys.remove(k.key);
    k.location = -1;
    return true;
  }

  private double decayed(KeyRate k, long now) {
    return k.count * Math.exp(-Math.max(0, now - k.stamp) / windowNanos);
  }

  private List<KeyRate> keysAt(int loc) {
    while (keysAt.size() <= loc) {
      keysAt.add(new ArrayList<>());
    }
    return keysAt.get(loc);
  }

  private void decay(int loc, long now) {
    long age = now - stamp[loc];
    if (age > 0) {
      double f = Math.exp(-age / windowNanos);
      arrivals[loc] *= f;
      done[loc] *= f;
      stamp[loc] = now;
    }
  }

  private void decayFleet(long now) {
    if (!fleetStamped) {
      fleetStamped = true;
      fleetStamp = now;
      return;
    }
    long age = now - fleetStamp;
    if (age > 0) {
      double f = Math.exp(-age / windowNanos);
      busyNanos *= f;
      doneWork *= f;
      fleetStamp = now;
    }
  }

  private void grow(int loc, long now) {
    if (loc >= arrivals.length) {
      int n = Math.max(loc + 1, arrivals.length * 2);
      arrivals = Arrays.copyOf(arrivals, n);
      stamp = Arrays.copyOf(stamp, n);
      outstanding = Arrays.copyOf(outstanding, n);
      busyMark = Arrays.copyOf(busyMark, n);
      seen = Arrays.copyOf(seen, n);
      done = Arrays.copyOf(done, n);
      peerArrivals = Arrays.copyOf(peerArrivals, n);
      peerOutstanding = Arrays.copyOf(peerOutstanding, n);
    }
    if (!seen[loc]) {
      seen[loc] = true;
      stamp[loc] = now;
    }
  }
}
