package dev.affinity.server.shared;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.executor.KvEvent;
import dev.affinity.kv.TrtllmKvEventCodec;
import dev.affinity.protocol.InternalAuth;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.Message;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One KV event batch on the cluster's stream, as a drain owner ({@link SharedKvEvents}) or a worker that publishes its
 * own events ({@link WorkerKvPublisher}) sends it: the body the events in TensorRT-LLM's {@code /kv_cache_events} JSON
 * ({@link TrtllmKvEventCodec}); headers the publisher key the frontends know the worker by ({@value #WORKER_HEADER}),
 * who sent it ({@value #FRONTEND_HEADER}, for logs), when ({@value #SENT_AT_HEADER}, epoch microseconds: the lag a
 * consumer measures), and with {@code internal_request_auth_key} an HMAC ({@value #AUTH_HEADER}) over the publisher
 * key and the body ({@link KvNames#canonical}).
 */
final class KvBatches {
  private static final Logger log = LoggerFactory.getLogger(KvBatches.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  static final String WORKER_HEADER = "Affinity-Worker";
  static final String FRONTEND_HEADER = "Affinity-Frontend";
  static final String AUTH_HEADER = "Affinity-Auth";
  static final String SENT_AT_HEADER = "Affinity-Sent-At";

  private KvBatches() {
  }

  /** The message of one batch, stamped now. */
  static NatsMessage message(String subject, String publisherKey, String sender, Optional<InternalAuth> auth,
      int tokensPerBlock, List<KvEvent> events) {
    byte[] body;
    try {
      body = JSON.writeValueAsBytes(TrtllmKvEventCodec.toJson(events, tokensPerBlock));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    Headers h = new Headers().put(WORKER_HEADER, publisherKey).put(FRONTEND_HEADER, sender)
        .put(SENT_AT_HEADER, Long.toString(nowMicros()));
    auth.ifPresent(a -> h.put(AUTH_HEADER, a.sign(KvNames.canonical(publisherKey, body))));
    return NatsMessage.builder().subject(subject).headers(h).data(body).build();
  }

  /**
   * Publishes one batch to the stream and says whether it went; a batch that does not is lost: counted in
   * {@code failures} and logged at WARN the first time and at every power of two after ({@code whose} names the
   * publisher in the log), the frontends clearing the ranks at the event-id gap that follows.
   */
  static boolean publish(JetStream js, NatsMessage batch, int events, AtomicLong failures, String whose) {
    try {
      js.publish(batch);
      return true;
    } catch (IOException | JetStreamApiException | RuntimeException e) {
      long n = failures.incrementAndGet();
      if (n == 1 || Long.bitCount(n) == 1) {
        log.warn("{}: a KV event batch ({} events) was not published ({}); {} lost so far (the frontends clear the "
            + "ranks at the event-id gap)", whose, events, e.toString(), n);
      }
      return false;
    }
  }

  /** Microseconds since the epoch (the clocks of the frontends and workers of one cluster are assumed in sync). */
  static long nowMicros() {
    Instant now = Instant.now();
    return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
  }

  /** When a batch was sent (epoch microseconds), or -1 when it does not say. */
  static long sentAtMicros(Message m) {
    String v = m.getHeaders() == null ? null : m.getHeaders().getFirst(SENT_AT_HEADER);
    if (v == null) {
      return -1;
    }
    try {
      return Long.parseLong(v);
    } catch (NumberFormatException e) {
      return -1;
    }
  }
}
