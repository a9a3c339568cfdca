package dev.affinity.routing;

/**
 * A router that pins routing keys (conversation or sub-agent affinity ids) to candidates: {@code conversation}
 * and {@code affinity}. Several frontends keep their pins in agreement through it (the server's shared pins):
 * before routing a key, a frontend makes its router adopt the pin the others agreed on.
 */
public interface PinKeeping {
  /**
   * Pins {@code key} to {@code candidate} (one of this router's workers), replacing the router's own pin; the
   * key's next request goes there as a pinned one, unless the router's rules move it (the worker is dead or
   * excluded, or for {@code affinity} the pin costs too much).
   */
  void adoptPin(String key, Candidate candidate);

  /**
   * Forgets the pin of {@code key} (its session ended or expired): its next request, if any, is placed again.
   * False when the key had no pin.
   */
  boolean releasePin(String key);

  /** Keys pinned now (metrics). */
  int pinCount();
}
