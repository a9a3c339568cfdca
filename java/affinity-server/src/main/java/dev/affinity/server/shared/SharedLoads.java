package dev.affinity.server.shared;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.protocol.InternalAuth;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.LoadShare;
import dev.affinity.routing.RoutedShare;
import dev.affinity.routing.Router;
import io.nats.client.Connection;
import io.nats.client.Dispatcher;
import io.nats.client.Message;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One load view for several frontends (issue 44 item 2): every {@code period} each frontend publishes its own
 * in-flight work per candidate of each fleet ({@link Router#ownLoads}) on core NATS, subject
 * {@code <prefix><frontend token>}, and hands every other frontend's latest report to its routers
 * ({@link Router#peerLoads}), which from then on route on the fleet-wide sums. A report replaces the sender's last; a
 * frontend not heard from for {@code expiry} stops counting ({@link Router#forgetPeer}): a dead frontend's requests
 * leave the view within it. Core NATS, not a stream: a report is only worth its latest value, and a lost one is
 * replaced a period later. With {@code internal_request_auth_key} each report carries an HMAC over its body, and a
 * report without a valid one is dropped and counted. Reports and expiry run on one thread of their own. A report also
 * carries the prefixes the frontend routed since its last one ({@link Router#routedSince}, the keys its router keeps
 * for predict-on-route, at most {@value #MAX_ROUTED_KEYS} keys), which the others' routers record as theirs
 * ({@link Router#peerRouted}); unlike loads these are not taken back when a peer expires: they end with their TTL or
 * the worker's KV events, as a frontend's own do.
 */
public final class SharedLoads implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(SharedLoads.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  /** How often a frontend reports its load: the staleness of every other frontend's view of it. */
  public static final Duration PERIOD = Duration.ofMillis(20);
  /** How long a frontend that stopped reporting still counts (50 reports missed: it died or lost NATS). */
  public static final Duration EXPIRY = Duration.ofSeconds(1);
  /** The most routed-prefix keys one report carries (about 650 KB of JSON, under NATS's 1 MB payload). */
  static final int MAX_ROUTED_KEYS = 32_768;

  private final Connection connection;
  /** The subject of this frontend's own reports (they come back to it: not applied, not even parsed). */
  private final String ownSubject;
  private final String frontendId;
  private final Optional<InternalAuth> auth;
  private final Map<Fleet, Router> routers;
  private final Duration expiry;
  private final Dispatcher dispatcher;
  private final ScheduledExecutorService ticks = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "affinity-shared-load");
    t.setDaemon(true);
    return t;
  });
  /** Per peer frontend: when its last report arrived (nanoTime). */
  private final Map<String, Long> lastHeard = new ConcurrentHashMap<>();
  private final AtomicLong published = new AtomicLong();
  private final AtomicLong received = new AtomicLong();
  private final AtomicLong rejected = new AtomicLong();
  private final AtomicLong expired = new AtomicLong();
  private final AtomicBoolean rejectionLogged = new AtomicBoolean();

  /**
   * Starts publishing and applying reports.
   *
   * @param prefix the subject prefix of the cluster's reports, ending in a dot ({@code affinity.<cluster>.load.})
   * @param frontendId this frontend's id (its reports carry it; its own are not applied)
   * @param period how often this frontend reports (the view's staleness, tens of milliseconds)
   * @param expiry how long a silent peer still counts
   */
  public SharedLoads(Connection connection, String prefix, String frontendId, Optional<InternalAuth> auth,
      Map<Fleet, Router> routers, Duration period, Duration expiry) {
    this.connection = connection;
    this.ownSubject = prefix + KvNames.token(frontendId);
    this.frontendId = frontendId;
    this.auth = auth;
    this.routers = Map.copyOf(routers);
    this.expiry = expiry;
    this.dispatcher = connection.createDispatcher(this::onReport);
    dispatcher.subscribe(prefix + "*");
    ticks.scheduleWithFixedDelay(this::tick, 0, Math.max(1, period.toMillis()), TimeUnit.MILLISECONDS);
  }

  private void tick() {
    try {
      publish();
      expire();
    } catch (RuntimeException e) {
      log.warn("shared load: {}", e.toString());
    }
  }

  /** This frontend's report: its own shares per fleet. */
  private void publish() {
    if (connection.getStatus() != Connection.Status.CONNECTED) {
      return;
    }
    ObjectNode body = JSON.createObjectNode().put("frontend", frontendId);
    ObjectNode fleets = body.putObject("fleets");
    routers.forEach((fleet, router) -> {
      ArrayNode list = fleets.putArray(fleet.name().toLowerCase());
      for (LoadShare s : router.ownLoads()) {
        list.addArray().add(s.workerId()).add(s.rank()).add(s.requests()).add(s.tokens()).add(s.work()).add(s.uncached())
            .add(s.arrivals()).add(s.doneWork());
      }
    });
    ObjectNode routed = null;
    for (Map.Entry<Fleet, Router> e : routers.entrySet()) {
      List<RoutedShare> shares = e.getValue().routedSince();
      if (shares.isEmpty()) {
        continue;
      }
      routed = routed == null ? body.putObject("routed") : routed;
      ArrayNode list = routed.putArray(e.getKey().name().toLowerCase());
      int keys = 0;
      for (RoutedShare r : shares) {
        long[] k = r.keys();
        if (keys + k.length > MAX_ROUTED_KEYS) {
          break;  // predictions are advisory: the rest are left out rather than make the report too big for NATS
        }
        keys += k.length;
        ArrayNode row = list.addArray().add(r.workerId()).add(r.rank()).addArray();
        for (long key : k) {
          row.add(key);
        }
      }
    }
    byte[] bytes = body.toString().getBytes(StandardCharsets.UTF_8);
    Headers headers = new Headers();
    auth.ifPresent(a -> headers.put(SharedKvEvents.AUTH_HEADER, a.sign(KvNames.canonicalLoad(bytes))));
    connection.publish(NatsMessage.builder().subject(ownSubject).headers(headers).data(bytes).build());
    published.incrementAndGet();
  }

  private void onReport(Message m) {
    if (ownSubject.equals(m.getSubject())) {
      return;  // this frontend's own report
    }
    byte[] data = m.getData() == null ? new byte[0] : m.getData();
    if (auth.isPresent() && !auth.get().verify(KvNames.canonicalLoad(data), m.getHeaders() == null ? null
        : m.getHeaders().getFirst(SharedKvEvents.AUTH_HEADER))) {
      reject("its " + SharedKvEvents.AUTH_HEADER + " HMAC does not match internal_request_auth_key");
      return;
    }
    JsonNode body;
    try {
      body = JSON.readTree(data);
    } catch (IOException e) {
      reject("not JSON: " + e.getMessage());
      return;
    }
    String peer = body.path("frontend").asText("");
    if (peer.isEmpty()) {
      reject("no frontend");
      return;
    }
    if (peer.equals(frontendId)) {
      return;  // this frontend's id on another subject: never its peer
    }
    try {
      for (Map.Entry<Fleet, Router> e : routers.entrySet()) {
        String fleet = e.getKey().name().toLowerCase();
        e.getValue().peerLoads(peer, shares(body.path("fleets").path(fleet)));
        List<RoutedShare> routed = routed(body.path("routed").path(fleet));
        if (!routed.isEmpty()) {
          e.getValue().peerRouted(routed);
        }
      }
    } catch (IllegalArgumentException e) {
      reject(e.getMessage());
      return;
    }
    lastHeard.put(peer, System.nanoTime());
    received.incrementAndGet();
  }

  private static List<LoadShare> shares(JsonNode list) {
    List<LoadShare> out = new ArrayList<>(list.size());
    for (JsonNode s : list) {
      // 6 fields from a frontend of the version before rates were shared: no rates
      if (!s.isArray() || (s.size() != 6 && s.size() != 8) || !s.get(0).isTextual() || !s.get(1).canConvertToInt()
          || !s.get(2).canConvertToInt() || !s.get(3).canConvertToLong() || !s.get(4).isNumber()
          || !s.get(5).canConvertToLong() || s.size() == 8 && (!s.get(6).isNumber() || !s.get(7).isNumber())) {
        throw new IllegalArgumentException("a share is not [worker, rank, requests, tokens, work, uncached, arrivals, "
            + "done work]: " + s);
      }
      out.add(new LoadShare(s.get(0).asText(), s.get(1).asInt(), s.get(2).asInt(), s.get(3).asLong(),
          s.get(4).asDouble(), s.get(5).asLong(), s.size() == 8 ? s.get(6).asDouble() : 0,
          s.size() == 8 ? s.get(7).asDouble() : 0));
    }
    return out;
  }

  private static List<RoutedShare> routed(JsonNode list) {
    if (list.isMissingNode()) {
      return List.of();
    }
    List<RoutedShare> out = new ArrayList<>(list.size());
    for (JsonNode r : list) {
      if (!r.isArray() || r.size() != 3 || !r.get(0).isTextual() || !r.get(1).canConvertToInt() || !r.get(2).isArray()) {
        throw new IllegalArgumentException("a routed prefix is not [worker, rank, [keys]]: " + r);
      }
      long[] keys = new long[r.get(2).size()];
      for (int i = 0; i < keys.length; i++) {
        JsonNode k = r.get(2).get(i);
        if (!k.isIntegralNumber() || !k.canConvertToLong()) {
          throw new IllegalArgumentException("a routed prefix's key is not a 64-bit integer: " + k);
        }
        keys[i] = k.asLong();
      }
      out.add(new RoutedShare(r.get(0).asText(), r.get(1).asInt(), keys));
    }
    return out;
  }

  private void reject(String why) {
    rejected.incrementAndGet();
    if (rejectionLogged.compareAndSet(false, true)) {
      log.warn("shared load: a report was dropped: {} (logged once; counted)", why);
    } else {
      log.debug("shared load: a report was dropped: {}", why);
    }
  }

  /** Peers silent for longer than the expiry stop counting. */
  private void expire() {
    long now = System.nanoTime();
    for (Map.Entry<String, Long> e : lastHeard.entrySet()) {
      if (now - e.getValue() > expiry.toNanos() && lastHeard.remove(e.getKey(), e.getValue())) {
        routers.values().forEach(r -> r.forgetPeer(e.getKey()));
        expired.incrementAndGet();
        log.info("shared load: frontend {} silent for {} ms; its load no longer counts", e.getKey(), expiry.toMillis());
      }
    }
  }

  /** Reports this frontend published. */
  public long published() {
    return published.get();
  }

  /** Peers' reports applied. */
  public long received() {
    return received.get();
  }

  /** Reports dropped (a failed HMAC, not a report). */
  public long rejected() {
    return rejected.get();
  }

  /** Peers forgotten after falling silent. */
  public long expired() {
    return expired.get();
  }

  /** Stops reporting and applying; the peers forget this frontend within their expiry. */
  @Override
  public void close() {
    ticks.shutdownNow();
    try {
      connection.closeDispatcher(dispatcher);
    } catch (RuntimeException e) {
      log.debug("shared load: closing the dispatcher: {}", e.toString());
    }
  }
}
