package dev.affinity.server.shared;

import io.nats.client.Connection;
import io.nats.client.Consumer;
import io.nats.client.ErrorListener;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.support.Status;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * jnats's errors in the frontend's log (SLF4J) instead of java.util.logging, where jnats's default listener writes
 * them as SEVERE lines. Errors the server sends ("Authorization Violation") and exceptions of the connection are
 * warnings, each kind once until the connection is up again ({@link #reset()}) and at debug after, as a client that
 * reconnects for ever would repeat them every half second. Slow consumers, discarded messages, missed heartbeats
 * (the ordered consumer then resets itself) and unexpected statuses are debug.
 */
final class NatsErrorLog implements ErrorListener {
  private static final Logger log = LoggerFactory.getLogger(NatsErrorLog.class);
  /** Kinds logged as a warning since the connection was last up; bounded, as kinds are few. */
  private final Set<String> warned = ConcurrentHashMap.newKeySet();

  /** The connection is up: the next error of each kind is a warning again. */
  void reset() {
    warned.clear();
  }

  /** Whether {@code kind} has not been warned about since the last {@link #reset()} (and now is). */
  boolean first(String kind) {
    return warned.size() < 64 && warned.add(kind);
  }

  @Override
  public void errorOccurred(Connection conn, String error) {
    if (first("error " + error)) {
      log.warn("NATS error: {} (repeats are logged at debug until the connection is up again)", error);
    } else {
      log.debug("NATS error: {}", error);
    }
  }

  @Override
  public void exceptionOccurred(Connection conn, Exception exp) {
    if (first("exception " + exp.getClass().getName())) {
      log.warn("NATS connection: {} (repeats are logged at debug until the connection is up again)", exp.toString());
    } else {
      log.debug("NATS connection: {}", exp.toString());
    }
  }

  @Override
  public void socketWriteTimeout(Connection conn) {
    if (first("socket write timeout")) {
      log.warn("NATS: a socket write timed out; reconnecting");
    } else {
      log.debug("NATS: a socket write timed out");
    }
  }

  @Override
  public void slowConsumerDetected(Connection conn, Consumer consumer) {
    log.debug("NATS: slow consumer ({} messages pending)", consumer.getPendingMessageCount());
  }

  @Override
  public void messageDiscarded(Connection conn, Message msg) {
    log.debug("NATS: a message on {} was discarded", msg.getSubject());
  }

  @Override
  public void heartbeatAlarm(Connection conn, JetStreamSubscription sub, long lastStreamSequence,
      long lastConsumerSequence) {
    log.debug("NATS: heartbeats missed on {} (stream sequence {}); the ordered consumer resets", sub.getSubject(),
        lastStreamSequence);
  }

  @Override
  public void unhandledStatus(Connection conn, JetStreamSubscription sub, Status status) {
    log.debug("NATS: unhandled status on {}: {}", sub.getSubject(), status);
  }

  @Override
  public void pullStatusWarning(Connection conn, JetStreamSubscription sub, Status status) {
    log.debug("NATS: pull status on {}: {}", sub.getSubject(), status);
  }

  @Override
  public void pullStatusError(Connection conn, JetStreamSubscription sub, Status status) {
    log.debug("NATS: pull error on {}: {}", sub.getSubject(), status);
  }

  @Override
  public void flowControlProcessed(Connection conn, JetStreamSubscription sub, String subject,
      FlowControlSource source) {
    log.trace("NATS: flow control on {} ({})", subject, source);
  }
}
