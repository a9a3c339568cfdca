package dev.affinity.routing;

/**
 * A prompt prefix one frontend just routed to a candidate (a rank of a worker, or the whole worker, {@code rank} -1),
 * as it shares it with the others for predict-on-route: the block keys its router keeps of the prompt (every
 * {@code stride}-th and the last, {@link dev.affinity.kv.RoutedPrefixes#record}), which a peer with the same
 * configuration records as they are, so that it too counts the prefix as cached there until the worker's KV events
 * say so.
 */
public record RoutedShare(String workerId, int rank, long[] keys) {
  public RoutedShare {
    keys = keys.clone();
  }

  @Override
  public long[] keys() {
    return keys.clone();
  }
}
