package dev.affinity.server.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.server.worker.FakeTrtllmServe.Received;
import dev.affinity.worker.WorkerRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The worker connections: kept alive and reused, capped when asked, closed when idle or when the worker says so. */
class HttpWorkerPoolTest {
  static final ProtocolCodec CODEC = HttpWorkerTest.CODEC;

  private FakeTrtllmServe fake;
  private final List<HttpWorker> workers = new ArrayList<>();
  private final List<RecordingListener> listeners = new ArrayList<>();

  @BeforeEach
  void start() throws Exception {
    fake = FakeTrtllmServe.start();
  }

  @AfterEach
  void stop() {
    workers.forEach(HttpWorker::close);
    fake.close();
    listeners.forEach(RecordingListener::assertContract);
  }

  private HttpWorker worker(HttpWorkerSettings settings) throws WorkerSetupException {
    HttpWorker w = HttpWorker.connect(settings, CODEC);
    workers.add(w);
    return w;
  }

  private RecordingListener send(HttpWorker w, boolean streaming) {
    RecordingListener l = new RecordingListener();
    listeners.add(l);
    String json = streaming ? HttpWorkerTest.GEN_COMPLETION : HttpWorkerTest.CTX_COMPLETION;
    w.send(new WorkerRequest(1, HttpWorkerTest.completion(json), null, -1, Duration.ofSeconds(30)), l);
    return l;
  }

  private Set<Integer> connectionsUsed() {
    return fake.received("/v1/completions").stream().map(Received::remotePort).collect(Collectors.toSet());
  }

  /** Waits (bounded, for a broken build) until the condition holds. */
  private static void await(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, what);
      Thread.sleep(5);
    }
  }

  @Test
  void oneConnectionServesRequestsOneAfterAnother() throws Exception {
    HttpWorker w = worker(HttpWorkerSettings.of(fake.url()));
    for (int i = 0; i < 10; i++) {
      send(w, i % 2 == 0).awaitReport();
    }
    assertEquals(1, connectionsUsed().size(), "every leg on the connection /server_info opened");
    await(() -> w.idleConnections() == 1, "the connection goes back to the pool after each answer");
    assertEquals(1, w.openConnections());
  }

  @Test
  void aLimitCapsTheConnectionsAndQueuedRequestsStillAllComplete() throws Exception {
    HttpWorker w = worker(HttpWorkerSettings.of(fake.url()).withMaxConnections(2));
    fake.streamChunks(3);
    List<RecordingListener> all = new ArrayList<>();
    for (int i = 0; i < 24; i++) {
      all.add(send(w, i % 3 != 0));
    }
    for (RecordingListener l : all) {
      l.awaitReport();
    }
    assertTrue(connectionsUsed().size() <= 2, "at most 2 connections: " + connectionsUsed());
    assertTrue(w.openConnections() <= 2);
  }

  @Test
  void withoutALimitConcurrentRequestsOpenConnectionsThatTheNextOnesReuse() throws Exception {
    HttpWorker w = worker(HttpWorkerSettings.of(fake.url()));
    List<RecordingListener> all = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      all.add(send(w, true));
    }
    all.forEach(RecordingListener::awaitReport);
    int opened = w.openConnections();
    assertTrue(opened >= 1 && opened <= 8, "no more connections than requests at once: " + opened);
    await(() -> w.idleConnections() == w.openConnections(), "all idle");
    for (int i = 0; i < 5; i++) {
      send(w, false).awaitReport();
    }
    assertEquals(opened, w.openConnections(), "later requests reuse them");
  }

  @Test
  void idleConnectionsAreClosedAfterTheIdleTimeout() throws Exception {
    HttpWorker w = worker(HttpWorkerSettings.of(fake.url()).withIdleTimeout(Duration.ofMillis(50)));
    send(w, false).awaitReport();
    await(() -> w.openConnections() == 0, "the idle connection is closed");
    send(w, true).awaitReport(); // and a new one is opened when needed
    assertEquals(2, connectionsUsed().size());
  }

  @Test
  void aConnectionTheWorkerClosesIsNotReused() throws Exception {
    fake.closeConnections(true);
    HttpWorker w = worker(HttpWorkerSettings.of(fake.url()));
    for (int i = 0; i < 3; i++) {
      send(w, i == 1).awaitReport();
    }
    assertEquals(3, connectionsUsed().size(), "Connection: close is honoured");
    await(() -> w.openConnections() == 0, "nothing left open");
  }
}
