package dev.affinity.bench.jmh;

import dev.affinity.executor.ExecutorRequest;
import dev.affinity.executor.ExecutorResponse;
import dev.affinity.nativebridge.NativeExecutor;
import dev.affinity.nativebridge.python.PyTorchBackend;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The pytorch backend's own cost: Java enqueue → facade → host queue + eventfd → the Python loop's
 * task around {@code LLM.generate_async} → response back through the facade, with the stand-in
 * tensorrt_llm (one token, no model), so the figure is the bridge, not a GPU. One poller thread
 * completes each request's future; run with {@code -t 1} and {@code -t 8} (scripts/bench-pytorch).
 * Needs {@code -Daffinity.standin=<repo>/native/tests/python}.
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Dorg.bytedeco.javacpp.maxPhysicalBytes=0"})
@State(Scope.Benchmark)
public class PyTorchHostBenchmark {
  private NativeExecutor executor;
  private Thread poller;
  private volatile boolean running;
  private final Map<Long, CompletableFuture<ExecutorResponse>> waiting = new ConcurrentHashMap<>();
  private final AtomicLong ids = new AtomicLong();
  private final int[] prompt = new int[128];

  @Setup(Level.Trial)
  public void setUp() {
    String standin = System.getProperty("affinity.standin");
    if (standin == null) {
      throw new IllegalStateException("run with -Daffinity.standin=<repo>/native/tests/python");
    }
    executor = NativeExecutor.create(PyTorchBackend.NAME, """
        {"python_path": ["%s"], "model": "standin", "kv_events": {"enabled": false}, "stats_poll_interval_ms": 0}
        """.formatted(standin));
    for (int i = 0; i < prompt.length; i++) {
      prompt[i] = 1 + i;
    }
    running = true;
    poller = new Thread(() -> {
      while (running) {
        for (ExecutorResponse r : executor.awaitResponses(1024, Duration.ofMillis(50))) {
          if (r.isFinal()) {
            CompletableFuture<ExecutorResponse> f = waiting.remove(r.clientRequestId());
            if (f != null) {
              f.complete(r);
            }
          }
        }
      }
    }, "bench-poller");
    poller.start();
  }

  @TearDown(Level.Trial)
  public void tearDown() throws InterruptedException {
    running = false;
    poller.join();
    executor.close();
  }

  /** One request of one token, submit to final response. */
  @Benchmark
  public ExecutorResponse roundTrip() throws Exception {
    long id = ids.incrementAndGet();
    CompletableFuture<ExecutorResponse> f = new CompletableFuture<>();
    waiting.put(id, f);
    executor.enqueue(ExecutorRequest.builder(prompt, 1).clientRequestId(id).conversationId("bench").build());
    return f.get(10, TimeUnit.SECONDS);
  }
}
