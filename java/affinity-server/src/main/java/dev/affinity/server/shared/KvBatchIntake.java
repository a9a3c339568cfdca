package dev.affinity.server.shared;

import dev.affinity.executor.KvEvent;
import dev.affinity.kv.TrtllmKvEventCodec;
import dev.affinity.protocol.InternalAuth;
import dev.affinity.routing.Router;
import dev.affinity.server.shared.SharedKvEvents.Observer;
import dev.affinity.server.shared.SharedKvEvents.Rejection;
import io.nats.client.Message;
import java.util.ArrayDeque;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where a frontend's KV event batches from the stream go ({@link SharedKvEvents}' consuming side): each batch is
 * verified (its {@value KvBatches#AUTH_HEADER} HMAC, with a key), parsed, and applied to the router of the worker its
 * publisher key names. Batches of a key no worker here has yet are kept (bounded) until one registers with it. Batches
 * that fail the HMAC or do not parse are dropped, counted and logged (a warning at the first, debug after). Called in
 * stream order on the consumer's thread; registration comes from others, so the state is guarded by {@code this}.
 */
final class KvBatchIntake {
  private static final Logger log = LoggerFactory.getLogger(KvBatchIntake.class);
  /** Batches kept per publisher key this frontend does not know yet, and keys kept. */
  static final int PENDING_BATCHES = 4096;
  static final int PENDING_WORKERS = 256;

  /** One worker: its id in this frontend's routers, the router its batches go to, the key its batches carry. */
  private record Target(String workerId, Router router, String publisherKey) {
  }

  private final Optional<InternalAuth> auth;
  /** By publisher key: the worker's id when a frontend drains it, its own key when it publishes its events. */
  private final Map<String, Target> workers = new LinkedHashMap<>();
  /** Batches of keys not (yet) known here, in stream order. */
  private final Map<String, ArrayDeque<List<KvEvent>>> pending = new LinkedHashMap<>();
  private final AtomicLong applied = new AtomicLong();
  private final AtomicLong rejected = new AtomicLong();
  private final Map<Rejection, AtomicLong> rejectedBy = new EnumMap<>(Rejection.class);
  private final AtomicBoolean rejectionLogged = new AtomicBoolean();
  private volatile Observer observer = (w, n, lag) -> { };

  KvBatchIntake(Optional<InternalAuth> auth) {
    this.auth = auth;
    for (Rejection r : Rejection.values()) {
      rejectedBy.put(r, new AtomicLong());
    }
  }

  /** From now on the batches that carry {@code publisherKey} go to {@code router} as {@code workerId}'s, kept ones first. */
  synchronized void add(String workerId, Router router, String publisherKey) {
    Target t = new Target(workerId, router, publisherKey);
    workers.put(publisherKey, t);
    ArrayDeque<List<KvEvent>> q = pending.remove(publisherKey);
    for (List<KvEvent> events : q == null ? List.<List<KvEvent>>of() : q) {
      apply(t, events, -1);
    }
  }

  /** {@code workerId}'s batches are no longer applied. */
  synchronized void remove(String workerId) {
    workers.values().removeIf(t -> t.workerId.equals(workerId));
  }

  /** One batch from the stream. */
  void accept(Message m) {
    String worker = m.getHeaders() == null ? null : m.getHeaders().getFirst(KvBatches.WORKER_HEADER);
    byte[] body = m.getData() == null ? new byte[0] : m.getData();
    if (worker == null) {
      reject(m, Rejection.NO_WORKER_HEADER, "no " + KvBatches.WORKER_HEADER + " header");
      return;
    }
    if (auth.isPresent()
        && !auth.get().verify(KvNames.canonical(worker, body), m.getHeaders().getFirst(KvBatches.AUTH_HEADER))) {
      reject(m, Rejection.BAD_HMAC, "its " + KvBatches.AUTH_HEADER + " HMAC does not match internal_request_auth_key");
      return;
    }
    List<KvEvent> events;
    try {
      events = TrtllmKvEventCodec.parse(body);
    } catch (IllegalArgumentException e) {
      reject(m, Rejection.UNPARSABLE, "its body is not a KV event batch: " + e.getMessage());
      return;
    }
    long sentAt = KvBatches.sentAtMicros(m);
    synchronized (this) {
      Target t = workers.get(worker);
      if (t != null) {
        apply(t, events, sentAt < 0 ? -1 : Math.max(0, KvBatches.nowMicros() - sentAt));
        return;
      }
      ArrayDeque<List<KvEvent>> q = pending.get(worker);
      if (q == null) {
        if (pending.size() >= PENDING_WORKERS) {
          pending.remove(pending.keySet().iterator().next());
        }
        q = new ArrayDeque<>();
        pending.put(worker, q);
      }
      if (q.size() >= PENDING_BATCHES) {
        q.removeFirst();
      }
      q.addLast(events);
    }
  }

  private void apply(Target t, List<KvEvent> events, long lagMicros) {
    try {
      t.router.onKvEvents(t.workerId, events);
      applied.incrementAndGet();
      observer.applied(t.workerId, events.size(), lagMicros);
    } catch (RuntimeException e) {
      log.warn("worker {}: applying a shared KV event batch failed", t.workerId, e);
    }
  }

  private void reject(Message m, Rejection reason, String why) {
    long n = rejected.incrementAndGet();
    rejectedBy.get(reason).incrementAndGet();
    String from = m.getHeaders() == null || m.getHeaders().getFirst(KvBatches.FRONTEND_HEADER) == null
        ? "an unnamed publisher" : m.getHeaders().getFirst(KvBatches.FRONTEND_HEADER);
    if (rejectionLogged.compareAndSet(false, true)) {
      log.warn("dropped a KV event batch on {} from {}: {} (further drops are logged at debug and counted)",
          m.getSubject(), from, why);
    } else {
      log.debug("dropped KV event batch #{} on {} from {}: {}", n, m.getSubject(), from, why);
    }
  }

  void observe(Observer o) {
    observer = Objects.requireNonNull(o, "observer");
  }

  long applied() {
    return applied.get();
  }

  long rejected() {
    return rejected.get();
  }

  long rejected(Rejection reason) {
    return rejectedBy.get(reason).get();
  }
}
