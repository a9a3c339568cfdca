package dev.affinity.server.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.server.workermode.WorkerServer;
import dev.affinity.server.workermode.WorkerSettings;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.buffer.AbstractByteBuf;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * 10,000 requests through the frontend to two worker processes' servers (in this JVM), a third of them
 * cut off by their clients at random points, under Netty's leak detector in paranoid mode: afterwards no
 * buffer has leaked, no router selection is held, no call is in flight, and every worker connection left
 * open is idle in its pool (the pool's idle timeout is tested in {@link HttpWorkerPoolTest}).
 */
class WorkerPathLeakTest {
  static final int REQUESTS = 10_000;
  static final int CONCURRENCY = 24;
  static final String ZERO_COST = """
      {"num_ranks": 2, "timing": {"iteration_overhead_us": 0, "prefill_us_per_token": 0, "prefill_us_per_token_sq": 0,
       "decode_base_us": 0, "decode_us_per_seq": 0, "decode_us_per_kv_token": 0, "transfer_latency_us": 0}}""";

  private final List<AutoCloseable> open = new ArrayList<>();
  private final AtomicInteger leaks = new AtomicInteger();
  private ResourceLeakDetector<ByteBuf> detector;
  private AffinityServer server;

  @BeforeEach
  void start() throws Exception {
    assertEquals(ResourceLeakDetector.Level.PARANOID, ResourceLeakDetector.getLevel(),
        "the module's tests run with -Dio.netty.leakDetection.level=paranoid");
    detector = byteBufLeakDetector();
    detector.setLeakListener((type, records) -> leaks.incrementAndGet());
    WorkerServer ctx = worker("ctx");
    WorkerServer gen = worker("gen");
    String yaml = """
        hostname: 127.0.0.1
        port: 8000
        context_servers: {num_instances: 1, urls: ["127.0.0.1:%d"], router: {type: conversation}}
        generation_servers: {num_instances: 1, urls: ["127.0.0.1:%d"], router: {type: load_balancing}}
        affinity: {model: m}
        """.formatted(ctx.port(), gen.port());
    DisaggConfig cfg = ConfigLoader.parse(yaml, "leak.yaml").config();
    server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "t").withPort(0).withAccessLog(AccessLog.none()));
    open.add(server);
  }

  private WorkerServer worker(String name) throws IOException {
    WorkerServer w = WorkerServer.start(ZERO_COST, WorkerSettings.defaults().withName(name),
        FrontendOptions.defaults().withAccessLog(AccessLog.none()), "test");
    open.add(0, w);
    return w;
  }

  @AfterEach
  void stop() throws Exception {
    detector.setLeakListener(null);
    for (AutoCloseable c : open) {
      c.close();
    }
  }

  @SuppressWarnings("unchecked")
  private static ResourceLeakDetector<ByteBuf> byteBufLeakDetector() throws ReflectiveOperationException {
    Field f = AbstractByteBuf.class.getDeclaredField("leakDetector");
    f.setAccessible(true);
    return (ResourceLeakDetector<ByteBuf>) f.get(null);
  }

  @Test
  void tenThousandRequestsWithRandomDisconnectsLeaveNothingBehind() throws Exception {
    provesTheDetectorReportsALeak();

    AtomicInteger complete = new AtomicInteger();
    ExecutorService clients = Executors.newFixedThreadPool(CONCURRENCY);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < CONCURRENCY; t++) {
        int thread = t;
        done.add(clients.submit(() -> {
          Random random = new Random(14_000 + thread);
          for (int i = thread; i < REQUESTS; i += CONCURRENCY) {
            if (request(random, i)) {
              complete.incrementAndGet();
            }
          }
          return null;
        }));
      }
      for (Future<?> f : done) {
        f.get(5, TimeUnit.MINUTES); // a bound for a broken build
      }
    } finally {
      clients.shutdownNow();
    }
    assertTrue(complete.get() > REQUESTS / 3, "most requests were read to their end: " + complete.get());

    List<HttpWorker> workers = server.workers().stream().map(HttpWorker.class::cast).toList();
    await(() -> server.frontend().inFlight() == 0, "every request is over");
    await(() -> workers.stream().allMatch(w -> w.inFlight() == 0), "no worker call in flight");
    MeterRegistry registry = server.frontend().registry();
    for (String fleet : List.of("context", "generation")) {
      await(() -> registry.get("affinity_router_outstanding_selections").tag("fleet", fleet).gauge().value() == 0,
          "every " + fleet + " selection is released");
    }
    for (HttpWorker w : workers) {
      await(() -> w.openConnections() == w.idleConnections(), "every connection of " + w.id() + " is back in the pool");
    }
    assertEquals(0, leaksAfterGc(), "no Netty buffer leaked");
  }

  /** One request, cut off by the client at a random point (or read to its end: true). */
  private boolean request(Random random, int i) throws IOException {
    boolean stream = random.nextBoolean();
    byte[] body = ("{\"model\": \"m\", \"prompt\": [" + (i % 50) + ", 17, 23, 5, " + i + "], \"max_tokens\": 3"
        + (stream ? ", \"stream\": true" : "") + "}").getBytes(StandardCharsets.UTF_8);
    byte[] head = ("POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nConnection: close\r\n"
        + "X-Session-ID: s-" + (i % 50) + "\r\nContent-Length: " + body.length + "\r\n\r\n")
        .getBytes(StandardCharsets.US_ASCII);
    double cut = random.nextDouble();
    try (Socket s = new Socket()) {
      s.setSoTimeout(30_000);
      s.setTcpNoDelay(true); // no Nagle delay between a request's writes
      s.connect(new InetSocketAddress("127.0.0.1", server.port()));
      OutputStream out = s.getOutputStream();
      byte[] request = new byte[head.length + body.length];
      System.arraycopy(head, 0, request, 0, head.length);
      System.arraycopy(body, 0, request, head.length, body.length);
      if (cut < 0.10) {
        out.write(request, 0, head.length + body.length / 2); // the request never completes
        return false;
      }
      out.write(request);
      out.flush();
      if (cut < 0.20) {
        return false; // gone before any answer
      }
      InputStream in = s.getInputStream();
      int limit = cut < 0.35 ? 1 + random.nextInt(700) : Integer.MAX_VALUE; // gone mid-answer
      byte[] buf = new byte[512];
      int read = 0;
      for (int n; read < limit && (n = in.read(buf, 0, Math.min(buf.length, limit - read))) >= 0; ) {
        read += n;
      }
      return limit == Integer.MAX_VALUE;
    } catch (IOException e) {
      return false; // the frontend may reset a connection whose client went away
    }
  }

  /** A buffer dropped on purpose is reported: the check below can see leaks. */
  private void provesTheDetectorReportsALeak() throws InterruptedException {
    ByteBufAllocator.DEFAULT.buffer(16).writeInt(1); // never released
    await(() -> leaksAfterGc() > 0, "the leak detector reports a dropped buffer");
    leaks.set(0);
  }

  /** Leaks reported once the garbage collector has found the unreleased buffers. */
  private int leaksAfterGc() {
    for (int i = 0; i < 5; i++) {
      System.gc();
      try {
        Thread.sleep(20); // reference processing
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      ByteBufAllocator.DEFAULT.buffer(1).release(); // the detector reports on the next allocation it tracks
    }
    return leaks.get();
  }

  private static void await(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30); // a bound for a broken build
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, what);
      Thread.sleep(10);
    }
  }
}
