package dev.affinity.routing;

/**
 * One frontend's in-flight work at one candidate of a fleet (a rank of a worker, or the whole worker, {@code rank} -1,
 * when its ranks are not visible), as several frontends exchange it so that each routes on the fleet-wide load:
 * {@code requests} selections not yet released carrying {@code tokens} prompt tokens, and the expected prefill
 * {@code work} and {@code uncached} prompt tokens queued there (the routers that count prefill work; same units in every
 * frontend of one configuration).
 */
public record LoadShare(String workerId, int rank, int requests, long tokens, double work, long uncached) {
  /** Whether it carries no work at all. */
  public boolean isZero() {
    return requests == 0 && tokens == 0 && work == 0 && uncached == 0;
  }
}
