package dev.affinity.routing;

/**
 * One frontend's in-flight work at one candidate of a fleet (a rank of a worker, or the whole worker, {@code rank} -1,
 * when its ranks are not visible), as several frontends exchange it so that each routes on the fleet-wide load:
 * {@code requests} selections not yet released carrying {@code tokens} prompt tokens, and the expected prefill
 * {@code work} and {@code uncached} prompt tokens queued there (the routers that count prefill work; same units in every
 * frontend of one configuration). The routers that measure rates ({@code affinity}) add what they measured there of this
 * frontend's own traffic: {@code arrivals}, its requests' decaying count over the rate window, and {@code doneWork}, the
 * work its requests completed there, decayed the same way; both 0 for the others.
 */
public record LoadShare(String workerId, int rank, int requests, long tokens, double work, long uncached,
    double arrivals, double doneWork) {
  /** Below this a decaying rate counts as none: it is not reported. */
  static final double NEGLIGIBLE = 1e-3;

  /** A share without rates (the routers that measure none). */
  public LoadShare(String workerId, int rank, int requests, long tokens, double work, long uncached) {
    this(workerId, rank, requests, tokens, work, uncached, 0, 0);
  }

  /** Whether it carries no work and no rate at all. */
  public boolean isZero() {
    return requests == 0 && tokens == 0 && work == 0 && uncached == 0 && arrivals < NEGLIGIBLE
        && doneWork < NEGLIGIBLE;
  }
}
