package dev.affinity.bench.sim;

import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * How many frontends route the simulated fleet, behind a load balancer that hands them the requests in turn (round
 * robin by arrival), and what they share. Each frontend has its own routers (their own prefix indexes and loads), its
 * own {@code DisaggService} and admission, as {@code serve} processes would.
 *
 * <ul>
 *   <li><b>Unshared</b>: every worker's drained KV-event batches go to one frontend each, in turn (as independent
 *       pollers split a worker's drain), and a frontend's routers see only the work it routed itself.</li>
 *   <li><b>Shared</b> (production's {@code affinity.shared_state}): every batch reaches every frontend, and every
 *       {@code shareEvery} of virtual time each frontend's routers take every other frontend's
 *       {@link dev.affinity.routing.Router#ownLoads} through {@link dev.affinity.routing.Router#peerLoads} (a peer's
 *       load is up to {@code shareEvery} old when a request is routed, as with the frontends' 20 ms reports).</li>
 * </ul>
 *
 * One frontend ({@link #ONE}) is the simulator as it always was: one set of routers that sees every event and all the
 * load; sharing changes nothing there.
 *
 * @param count      frontends, 1 to 64 (each takes its own process id in the request ids)
 * @param shared     whether KV events and loads are shared (ignored for one frontend)
 * @param shareEvery how often the loads are exchanged, virtual time (&gt; 0)
 */
public record Frontends(int count, boolean shared, Duration shareEvery) {
  /** The largest number of frontends: the request ids' process-id field (6 bits) tells them apart. */
  public static final int MAX = 64;
  /** The production frontends' load-report period. */
  public static final Duration DEFAULT_SHARE_EVERY = Duration.ofMillis(20);
  /** One frontend: the simulator's behaviour before there were several. */
  public static final Frontends ONE = new Frontends(1, true, DEFAULT_SHARE_EVERY);

  public Frontends {
    Objects.requireNonNull(shareEvery, "shareEvery");
    if (count < 1 || count > MAX) {
      throw new IllegalArgumentException("frontends must be in [1, " + MAX + "], got " + count);
    }
    if (shareEvery.isNegative() || shareEvery.isZero()) {
      throw new IllegalArgumentException("the load-sharing period must be > 0, got " + shareEvery);
    }
  }

  /** Whether the frontends exchange KV events and loads (several of them, sharing). */
  public boolean sharing() {
    return count > 1 && shared;
  }

  /**
   * A run's label: the policy's name alone for one frontend (so that one frontend's report is what it always was),
   * else e.g. {@code affinity x4 shared} or {@code affinity x4 unshared} ({@code affinity x4 shared every 100ms} when the
   * loads are exchanged at another period than the default).
   */
  public String label(String policy) {
    if (count == 1) {
      return policy;
    }
    String label = String.format(Locale.ROOT, "%s x%d %s", policy, count, shared ? "shared" : "unshared");
    return shared && !shareEvery.equals(DEFAULT_SHARE_EVERY) ? label + " every " + shareEvery.toMillis() + "ms" : label;
  }
}
