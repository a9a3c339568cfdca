package dev.affinity.server.worker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.executor.KvEvent;
import dev.affinity.executor.KvEventType;
import dev.affinity.kv.HashAlgorithm;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.worker.WorkerInfo;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** HttpWorker's control plane against a fake trtllm-serve: /server_info, /health, /kv_cache_events, settings. */
class HttpWorkerControlTest {
  static final ProtocolCodec CODEC = new ProtocolCodec();
  static final String STORED = "{\"event_id\":1,\"data\":{\"type\":\"stored\",\"parent_hash\":null,\"blocks\":[{\"type\":"
      + "\"stored_block\",\"block_hash\":18446744073709551615,\"tokens\":[{\"type\":\"unique_token\",\"token_id\":5,"
      + "\"token_extra_id\":0}],\"cache_level\":0,\"priority\":35}]},\"window_size\":2048,\"attention_dp_rank\":1}";
  static final String REMOVED = "{\"event_id\":2,\"data\":{\"type\":\"removed\",\"block_hashes\":[1,2]},\"window_size\":2048}";

  private FakeTrtllmServe fake;
  private final List<HttpWorker> workers = new ArrayList<>();

  @BeforeEach
  void start() throws Exception {
    fake = FakeTrtllmServe.start();
  }

  @AfterEach
  void stop() {
    workers.forEach(HttpWorker::close);
    fake.close();
  }

  HttpWorker worker() throws WorkerSetupException {
    HttpWorker w = HttpWorker.connect(HttpWorkerSettings.of(fake.url()), CODEC);
    workers.add(w);
    return w;
  }

  private ListAppender<ILoggingEvent> capture(Class<?> type) {
    ListAppender<ILoggingEvent> logs = new ListAppender<>();
    logs.start();
    ((Logger) LoggerFactory.getLogger(type)).addAppender(logs);
    return logs;
  }

  private void release(Class<?> type, ListAppender<ILoggingEvent> logs) {
    ((Logger) LoggerFactory.getLogger(type)).detachAppender(logs);
  }

  // ---- /server_info ----

  @Test
  void adoptsTheWorkersServerInfoAndKeepsRanksHidden() throws Exception {
    HttpWorker w = worker();
    assertEquals(new WorkerInfo(64, HashAlgorithm.V2_SHA256_64, 1, false, 128), w.info());
    assertEquals(1, w.info().routableRanks(), "a trtllm-serve worker picks its rank itself");
    assertEquals("127.0.0.1:" + fake.port(), w.id());
    assertEquals("tcp://10.0.0.5:5555", w.serverInfo().path("disaggregated_params").path("ctx_info_endpoint").get(0)
        .asText(), "the raw answer is kept (generation-first merges its disaggregated_params)");
    assertEquals("GET", fake.last("/server_info").method());
    assertTrue(w.isAlive());
  }

  @Test
  void aMissingHashAlgorithmMeansV1WithAWarning() throws Exception {
    ObjectNode info = fake.serverInfo();
    info.remove("kv_cache_hash_algo");
    info.remove("max_batch_size");
    info.remove("tokens_per_block");
    fake.serverInfo(info);
    ListAppender<ILoggingEvent> logs = capture(ServerInfos.class);
    try {
      HttpWorker w = worker();
      assertEquals(new WorkerInfo(32, HashAlgorithm.V1_BLOCK_KEY, 1, false, 64), w.info(), "upstream defaults");
      assertTrue(logs.list.stream().anyMatch(e -> e.getLevel() == Level.WARN
          && e.getFormattedMessage().contains("no kv_cache_hash_algo")));
    } finally {
      release(ServerInfos.class, logs);
    }
  }

  @Test
  void adoptsTheWorkersMaxNumTokens() throws Exception {
    ObjectNode info = fake.serverInfo();
    info.put("max_num_tokens", 4096);
    fake.serverInfo(info);
    assertEquals(4096, worker().info().maxNumTokens());
    info.put("max_num_tokens", -1);
    fake.serverInfo(info);
    assertTrue(assertThrows(WorkerSetupException.class, this::worker).getMessage().contains("max_num_tokens"));
  }

  @Test
  void anUnknownHashAlgorithmRefusesTheWorkerNamingIt() {
    ObjectNode info = fake.serverInfo();
    info.put("kv_cache_hash_algo", "v3_quantum");
    fake.serverInfo(info);
    WorkerSetupException e = assertThrows(WorkerSetupException.class, this::worker);
    assertTrue(e.getMessage().contains("v3_quantum"), e.getMessage());
    assertTrue(e.getMessage().contains("127.0.0.1:" + fake.port()), e.getMessage());
    assertEquals("127.0.0.1:" + fake.port(), e.workerId());
  }

  @Test
  void unusableServerInfoRefusesTheWorker() throws Exception {
    ObjectNode info = fake.serverInfo();
    info.put("tokens_per_block", 0);
    fake.serverInfo(info);
    assertTrue(assertThrows(WorkerSetupException.class, this::worker).getMessage().contains("tokens_per_block"));

    info.put("tokens_per_block", 32).put("max_batch_size", "many");
    fake.serverInfo(info);
    assertTrue(assertThrows(WorkerSetupException.class, this::worker).getMessage().contains("max_batch_size"));

    fake.serverInfoStatus(503);
    WorkerSetupException e = assertThrows(WorkerSetupException.class, this::worker);
    assertTrue(e.getMessage().contains("503") && e.getMessage().contains("not ready"), e.getMessage());

    int closedPort;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      closedPort = s.getLocalPort();
    }
    WorkerSetupException refused = assertThrows(WorkerSetupException.class,
        () -> HttpWorker.connect(HttpWorkerSettings.of("127.0.0.1:" + closedPort), CODEC));
    assertTrue(refused.getMessage().contains("CONNECT"), refused.getMessage());
  }

  @Test
  void refreshAdoptsChangesAndAFailedRefreshKeepsTheLastInfo() throws Exception {
    HttpWorker w = worker();
    ObjectNode info = fake.serverInfo();
    info.put("tokens_per_block", 32).put("kv_cache_hash_algo", "v1_block_key");
    fake.serverInfo(info);
    assertEquals(new WorkerInfo(32, HashAlgorithm.V1_BLOCK_KEY, 1, false, 128), w.refreshInfo());
    assertEquals(32, w.info().tokensPerBlock());

    info.put("kv_cache_hash_algo", "nope");
    fake.serverInfo(info);
    assertThrows(WorkerSetupException.class, w::refreshInfo);
    assertEquals(new WorkerInfo(32, HashAlgorithm.V1_BLOCK_KEY, 1, false, 128), w.info());
  }

  @Test
  void anAffinityWorkerProcessShowsItsRanks() throws Exception {
    ObjectNode info = fake.serverInfo();
    info.putObject("affinity").put("num_ranks", 4).put("ranks_visible", true).put("name", "w-1");
    fake.serverInfo(info);
    HttpWorker w = worker();
    assertEquals(new WorkerInfo(64, HashAlgorithm.V2_SHA256_64, 4, true, 128), w.info());
    assertEquals(4, w.info().routableRanks(), "the router chooses among the worker's ranks");

    info.putObject("affinity").put("num_ranks", 4).put("ranks_visible", false);
    fake.serverInfo(info);
    assertEquals(new WorkerInfo(64, HashAlgorithm.V2_SHA256_64, 1, false, 128), w.refreshInfo(),
        "ranks not visible: one routable rank, as with trtllm-serve");
    info.putNull("affinity");
    fake.serverInfo(info);
    assertEquals(1, w.refreshInfo().routableRanks());
  }

  @Test
  void aBrokenRankExtensionRefusesTheWorkerNamingTheField() {
    ObjectNode info = fake.serverInfo();
    info.putObject("affinity").put("ranks_visible", true);
    fake.serverInfo(info);
    assertTrue(assertThrows(WorkerSetupException.class, this::worker).getMessage().contains("affinity.num_ranks"));

    info.putObject("affinity").put("ranks_visible", true).put("num_ranks", 0);
    fake.serverInfo(info);
    assertTrue(assertThrows(WorkerSetupException.class, this::worker).getMessage().contains("affinity.num_ranks"));

    info.putObject("affinity").put("ranks_visible", "yes").put("num_ranks", 2);
    fake.serverInfo(info);
    assertTrue(assertThrows(WorkerSetupException.class, this::worker).getMessage().contains("affinity.ranks_visible"));

    info.put("affinity", "on");
    fake.serverInfo(info);
    assertTrue(assertThrows(WorkerSetupException.class, this::worker).getMessage().contains("affinity must be an object"));
  }

  // ---- /health ----

  @Test
  void healthChecksUpdateAliveness() throws Exception {
    HttpWorker w = worker();
    assertTrue(w.checkHealth());
    assertTrue(w.isAlive());
    fake.healthStatus(503);
    assertFalse(w.checkHealth());
    assertFalse(w.isAlive());
    fake.healthStatus(200);
    assertTrue(w.checkHealthAsync().get(10, TimeUnit.SECONDS));
    assertTrue(w.isAlive());
    assertEquals(3, fake.received("/health").size());
    fake.close();
    assertFalse(w.checkHealth(), "no answer is dead");
    assertFalse(w.isAlive());
  }

  // ---- /kv_cache_events ----

  @Test
  void pollingDrainsEventsIntoTheSink() throws Exception {
    HttpWorker w = worker();
    LinkedBlockingQueue<List<KvEvent>> sink = new LinkedBlockingQueue<>();
    w.onKvEvents(sink::add);
    fake.addKvEvents(STORED, REMOVED);
    assertEquals(2, w.pollKvEvents().get(10, TimeUnit.SECONDS));
    List<KvEvent> batch = sink.poll();
    assertEquals(2, batch.size());
    assertEquals(KvEventType.STORED, batch.get(0).type());
    assertEquals(1, batch.get(0).rank());
    assertArrayEquals(new long[] {-1L}, batch.get(0).blockHashes(), "unsigned 64-bit hashes");
    assertEquals(KvEventType.REMOVED, batch.get(1).type());
    assertArrayEquals(new long[] {1, 2}, batch.get(1).blockHashes());

    assertEquals(0, w.pollKvEvents().get(10, TimeUnit.SECONDS), "drained");
    assertTrue(sink.isEmpty(), "an empty answer is not delivered");
    assertEquals("POST", fake.last("/kv_cache_events").method());
  }

  @Test
  void withoutASinkNothingIsPolledSoNoEventIsLost() throws Exception {
    HttpWorker w = worker();
    fake.addKvEvents(STORED);
    assertEquals(0, w.pollKvEvents().get(10, TimeUnit.SECONDS));
    assertEquals(0, fake.kvPolls());
    assertEquals(1, fake.pendingKvEvents());
  }

  @Test
  void badAnswersAndAFailingSinkAreLoggedAndPollingGoesOn() throws Exception {
    HttpWorker w = worker();
    LinkedBlockingQueue<List<KvEvent>> sink = new LinkedBlockingQueue<>();
    boolean[] failOnce = {true};
    w.onKvEvents(events -> {
      if (failOnce[0]) {
        failOnce[0] = false;
        throw new IllegalStateException("sink down");
      }
      sink.add(events);
    });
    ListAppender<ILoggingEvent> logs = capture(KvEventPoller.class);
    try {
      fake.nextKvBody("{not json");
      fake.nextKvBody("[{\"event_id\":1,\"data\":{\"type\":\"teleported\"}}]");
      fake.nextKvBody("{\"events\":[]}");
      for (int i = 0; i < 3; i++) {
        assertEquals(0, w.pollKvEvents().get(10, TimeUnit.SECONDS));
      }
      assertEquals(1, logs.list.stream().filter(e -> e.getLevel() == Level.WARN).count(),
          "one warning per run of failures");
      fake.addKvEvents(STORED);
      assertEquals(1, w.pollKvEvents().get(10, TimeUnit.SECONDS), "handed to the sink, which failed");
      fake.addKvEvents(REMOVED);
      assertEquals(1, w.pollKvEvents().get(10, TimeUnit.SECONDS));
      assertEquals(KvEventType.REMOVED, sink.poll().get(0).type());
      assertTrue(logs.list.stream().anyMatch(e -> e.getFormattedMessage().contains("sink failed")));
    } finally {
      release(KvEventPoller.class, logs);
    }
  }

  @Test
  void theScheduledPollerDeliversUntilStoppedAndCloseStopsIt() throws Exception {
    HttpWorker w = worker();
    LinkedBlockingQueue<List<KvEvent>> sink = new LinkedBlockingQueue<>();
    w.onKvEvents(sink::add);
    w.startKvEventPolling(Duration.ofMillis(5));
    w.startKvEventPolling(Duration.ofMillis(10)); // a restart, still one poller
    assertTrue(w.isKvEventPolling());
    fake.addKvEvents(STORED);
    assertEquals(KvEventType.STORED, sink.poll(10, TimeUnit.SECONDS).get(0).type());
    fake.addKvEvents(REMOVED);
    assertEquals(KvEventType.REMOVED, sink.poll(10, TimeUnit.SECONDS).get(0).type());
    w.stopKvEventPolling();
    assertFalse(w.isKvEventPolling());
    w.startKvEventPolling(Duration.ofMillis(10));
    w.close();
    assertFalse(w.isKvEventPolling());
    assertThrows(IllegalStateException.class, () -> w.startKvEventPolling(Duration.ofMillis(10)));
    assertThrows(IllegalArgumentException.class, () -> worker().startKvEventPolling(Duration.ZERO));
  }

  // ---- settings ----

  @Test
  void settingsAcceptBareHostPortAndNeverShowTheKey() {
    HttpWorkerSettings s = HttpWorkerSettings.of("10.0.0.7:8001/").withAuthKey("top-secret");
    assertEquals(URI.create("http://10.0.0.7:8001"), s.baseUrl());
    assertEquals("10.0.0.7:8001", s.workerId());
    assertFalse(s.toString().contains("top-secret"), s.toString());
    assertEquals("10.0.0.7:80", HttpWorkerSettings.of("http://10.0.0.7").workerId());
    assertEquals(null, HttpWorkerSettings.of("h:1").withAuthKey("").authKey(), "an empty key is no key");
    assertThrows(IllegalArgumentException.class, () -> HttpWorkerSettings.of("ftp://h:1"));
    assertThrows(IllegalArgumentException.class,
        () -> HttpWorkerSettings.of("h:1").withControlTimeout(Duration.ZERO));
  }
}
