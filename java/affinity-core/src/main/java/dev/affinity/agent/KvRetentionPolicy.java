package dev.affinity.agent;

import dev.affinity.executor.KvRetention;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * How long a context leg's blocks are kept at a raised retention priority across the session's tool pause
 * (TensorRT-LLM's {@code KvCacheRetentionConfig}: the priority holds for a duration after the blocks are released,
 * then reverts to the default and least-recently-used eviction takes over).
 *
 * <p>Under LRU a released block survives about {@code T = C / w}: the time the rank takes to write its whole cache
 * {@code C} of new tokens at its measured write rate {@code w} (the uncached prompt tokens its context legs
 * compute). A session that comes back within {@code T} finds its blocks without help; one whose tool pause is longer
 * prefills them again. Keeping them for {@code D} saves that re-prefill when the turn ends in a tool call (probability
 * {@code p}) and the pause {@code g} falls in {@code (T, D]}; it costs the rank the space they hold beyond {@code T},
 * priced at what the rank's capacity misses cost it per token of cache and second ({@code m / C}: the measured rate
 * at which sessions prefill again tokens the rank held for them, per token of capacity). Per token kept:
 *
 * <pre>  net(D) = p x (F(D) - F(T)) - (m / C) x E[(min(g, D) - T)+]</pre>
 *
 * with {@code F} the distribution of the session's measured pauses ({@link AgentSessions#history}). The duration is
 * the sampled pause that maximizes it; no raised priority when none is positive (a rank without pressure never
 * evicts, a rank whose misses cost more than the pauses save keeps LRU). Thread-safe.
 */
public final class KvRetentionPolicy {
  /** The retention priority of kept blocks (above the default 35, below the 90 per_conversation retention uses). */
  public static final int KEEP_PRIORITY = 80;
  /** A session's own pauses count once it has this many; before, the pool of all sessions' is its estimate. */
  static final int MIN_OWN_PAUSES = 3;
  private static final int MAX_SESSIONS = 1 << 20;

  private final double windowNanos;
  private final Map<String, Rates> places = new HashMap<>();
  /** Each session's latest context leg: where it ran and its prompt (to see what a return found still cached). */
  private final LinkedHashMap<String, Last> lastLeg = new LinkedHashMap<>(16, 0.75f, true);

  private record Last(String place, int promptTokens) {}

  /** A place's decayed counts: tokens written, tokens written again after an eviction. */
  private static final class Rates {
    double written;
    double missed;
    long stamp;
  }

  /** A duration and its net value per token (both 0 when nothing is kept). */
  public record Ttl(double seconds, double net) {
    static final Ttl NONE = new Ttl(0, 0);
  }

  /** @param windowSeconds the window of the measured write and miss rates */
  public KvRetentionPolicy(double windowSeconds) {
    if (!(windowSeconds > 0)) {
      throw new IllegalArgumentException("window must be > 0 seconds, got " + windowSeconds);
    }
    this.windowNanos = windowSeconds * 1e9;
  }

  /**
   * A context leg of {@code session} at {@code place} prefilled {@code promptTokens - reusedTokens} of its prompt.
   * When the session's previous leg ran there too, the tokens of its prompt not found again were evicted meanwhile.
   */
  public synchronized void served(String session, String place, int promptTokens, int reusedTokens, long now) {
    Rates r = rates(place, now);
    int reused = Math.max(0, reusedTokens);
    r.written += Math.max(0, promptTokens - reused);
    if (session == null) {
      return;
    }
    Last before = lastLeg.get(session);
    if (before != null && before.place().equals(place)) {
      r.missed += Math.max(0, Math.min(before.promptTokens(), promptTokens - 1) - reused);
    }
    lastLeg.put(session, new Last(place, promptTokens));
    if (lastLeg.size() > MAX_SESSIONS) {
      var it = lastLeg.entrySet().iterator();
      it.next();
      it.remove();
    }
  }

  /**
   * The retention of a context leg at {@code place} whose rank holds {@code capacityTokens} of KV (0: unknown): its
   * whole prompt at {@link #KEEP_PRIORITY} for the duration {@link #ttl} finds, or the default priority (which also
   * puts back a priority an earlier turn raised) when keeping does not pay or the capacity is unknown.
   */
  public KvRetention decide(AgentSessions.History history, String place, long capacityTokens, long now) {
    if (history == null || capacityTokens <= 0) {
      return KvRetention.defaults();
    }
    double survival = survivalSeconds(place, capacityTokens, now);
    if (Double.isInfinite(survival)) {
      return KvRetention.defaults();
    }
    double price;
    synchronized (this) {
      price = rates(place, now).missed / (windowNanos / 1e9) / capacityTokens;
    }
    Ttl ttl = ttl(history.toolCallProbability(), history.pausesSeconds(), survival, price);
    if (ttl.net() <= 0) {
      return KvRetention.defaults();
    }
    return KvRetention.wholePrompt(KEEP_PRIORITY, Math.max(1, Math.round(Math.ceil(ttl.seconds() * 1000))));
  }

  /**
   * How long a released block survives least-recently-used eviction at {@code place}: its cache's capacity over the
   * rate the rank writes new tokens; infinite before it has written any (nothing is evicted).
   */
  public synchronized double survivalSeconds(String place, long capacityTokens, long now) {
    Rates r = places.get(place);
    if (r == null || capacityTokens <= 0) {
      return Double.POSITIVE_INFINITY;
    }
    double writeRate = rates(place, now).written / (windowNanos / 1e9);
    return writeRate > 0 ? capacityTokens / writeRate : Double.POSITIVE_INFINITY;
  }

  /**
   * The duration among the sampled pauses that maximizes {@code p x (F(D) - F(T)) - price x E[(min(g, D) - T)+]}
   * ({@code T}: {@code survivalSeconds}, how long LRU keeps a released block; {@code price}: the cost of a token of
   * cache per second, in re-prefilled tokens); {@link Ttl#NONE} when no duration has a positive value.
   */
  public static Ttl ttl(double toolCallProbability, double[] pausesSeconds, double survivalSeconds, double price) {
    if (pausesSeconds.length == 0 || Double.isInfinite(survivalSeconds)) {
      return Ttl.NONE;
    }
    double[] g = pausesSeconds.clone();
    Arrays.sort(g);
    int n = g.length;
    int bridged = 0;  // pauses LRU alone bridges
    while (bridged < n && g[bridged] <= survivalSeconds) {
      bridged++;
    }
    // held(D = g[k]) = sum over the pauses in (T, D] of (g - T), plus (D - T) for each longer one
    Ttl best = Ttl.NONE;
    double heldBelow = 0;
    for (int k = bridged; k < n; k++) {
      double d = g[k];
      heldBelow += d - survivalSeconds;
      double held = heldBelow + (n - 1 - k) * (d - survivalSeconds);
      double net = toolCallProbability * (k + 1 - bridged) / n - price * held / n;
      if (net > best.net()) {
        best = new Ttl(d, net);
      }
    }
    return best;
  }

  private Rates rates(String place, long now) {
    Rates r = places.computeIfAbsent(place, k -> {
      Rates x = new Rates();
      x.stamp = now;
      return x;
    });
    long age = now - r.stamp;
    if (age > 0) {
      double f = Math.exp(-age / windowNanos);
      r.written *= f;
      r.missed *= f;
      r.stamp = now;
    }
    return r;
  }
}
