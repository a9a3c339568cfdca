package dev.affinity.server.http;

import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The callbacks registered through {@link dev.affinity.frontend.ClientSink#onDisconnect}: each runs at
 * most once, only when the connection closed before the exchange was complete; one registered after
 * that close runs at once, one registered after a normal completion never. Event-loop confined.
 */
final class DisconnectCallbacks {
  private static final Logger LOG = LoggerFactory.getLogger(DisconnectCallbacks.class);

  private List<Runnable> callbacks;
  private boolean disconnected;
  private boolean forgotten;

  void add(Runnable callback) {
    if (disconnected) {
      run(callback);
    } else if (!forgotten) {
      if (callbacks == null) {
        callbacks = new ArrayList<>(1);
      }
      callbacks.add(callback);
    }
  }

  /** The connection closed first: runs the callbacks registered so far, and later ones at once. */
  void disconnected() {
    disconnected = true;
    List<Runnable> registered = callbacks;
    callbacks = null;
    if (registered != null) {
      registered.forEach(this::run);
    }
  }

  /** The exchange completed normally: the callbacks never run. */
  void forget() {
    forgotten = true;
    callbacks = null;
  }

  private void run(Runnable callback) {
    try {
      callback.run();
    } catch (RuntimeException e) {
      LOG.warn("a disconnect callback failed", e);
    }
  }
}
