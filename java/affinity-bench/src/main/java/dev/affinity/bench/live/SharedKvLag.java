package dev.affinity.bench.live;

import dev.affinity.config.Location;
import dev.affinity.config.RouterConfig;
import dev.affinity.config.SharedStateSettings;
import dev.affinity.executor.KvEvent;
import dev.affinity.executor.KvEventType;
import dev.affinity.kv.HashAlgorithm;
import dev.affinity.kv.PrefixIndex;
import dev.affinity.protocol.InternalAuth;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Router;
import dev.affinity.routing.RouterContext;
import dev.affinity.routing.RouterFactory;
import dev.affinity.server.shared.SharedKvEvents;
import dev.affinity.server.shared.WorkerKvPublisher;
import dev.affinity.worker.WorkerInfo;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code bench shared-kv-lag}: how long a KV event takes from a worker that publishes its own events
 * ({@link WorkerKvPublisher}, as {@code affinity worker --nats} runs it) through NATS JetStream to a frontend's index
 * ({@link SharedKvEvents}, applying into a real {@code kv_cache_aware} router), at a given event rate; and the CPU the
 * frontend's side spends per event. Publishers and consumer share this JVM (one clock); each worker's events come from
 * a generator paced by the clock (stored chains of {@code --blocks-per-event} blocks, then their removal, per rank), so
 * the publisher takes what "the executor" emitted since its last look, as it does from a real executor.
 */
@Command(name = "shared-kv-lag", mixinStandardHelpOptions = true,
    description = "KV event propagation lag through NATS JetStream at a given rate, and the frontend's ingest CPU per event.")
public final class SharedKvLag implements Callable<Integer> {
  @Spec
  picocli.CommandLine.Model.CommandSpec spec;

  @Option(names = "--nats", defaultValue = "nats://127.0.0.1:4222", description = "NATS server with JetStream (default: ${DEFAULT-VALUE}).")
  String nats;

  @Option(names = "--events-per-second", defaultValue = "50000", description = "All workers together (default: ${DEFAULT-VALUE}).")
  int eventsPerSecond;

  @Option(names = "--workers", defaultValue = "8", description = "Publishing workers (default: ${DEFAULT-VALUE}).")
  int workers;

  @Option(names = "--ranks", defaultValue = "8", description = "Attention-DP ranks per worker (default: ${DEFAULT-VALUE}).")
  int ranks;

  @Option(names = "--blocks-per-event", defaultValue = "4", description = "Blocks in one stored or removed event (default: ${DEFAULT-VALUE}).")
  int blocksPerEvent;

  @Option(names = "--warm-up-seconds", defaultValue = "10", description = "Not measured (default: ${DEFAULT-VALUE}).")
  double warmUpSeconds;

  @Option(names = "--seconds", defaultValue = "30", description = "Measured (default: ${DEFAULT-VALUE}).")
  double seconds;

  @Option(names = "--auth-key", description = "Sign and verify the batches with this internal_request_auth_key (default: none).")
  String authKey;

  @Option(names = "--cluster", defaultValue = "lagbench", description = "Cluster name: the stream AFFINITY_KV_<cluster>, deleted at start so the run reads only its own events (default: ${DEFAULT-VALUE}).")
  String cluster;

  /** One worker's events at its share of the rate: per rank, a chain stored, then removed, and so on. */
  private static final class Generator {
    private final int ranks;
    private final int blocks;
    private final double perNano;
    private final long start = System.nanoTime();
    private final long[] nextId;
    private final long[][] live;
    private final SplittableRandom random;
    private long emitted;

    Generator(int ranks, int blocks, double perSecond, long seed) {
      this.ranks = ranks;
      this.blocks = blocks;
      this.perNano = perSecond / 1e9;
      this.nextId = new long[ranks];
      this.live = new long[ranks][];
      this.random = new SplittableRandom(seed);
    }

    synchronized List<KvEvent> drain(int max) {
      long due = (long) ((System.nanoTime() - start) * perNano) - emitted;
      int n = (int) Math.min(max, Math.max(0, due));
      List<KvEvent> out = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        int rank = (int) (emitted++ % ranks);
        if (live[rank] == null) {
          long[] hashes = random.longs(blocks).toArray();
          live[rank] = hashes;
          out.add(new KvEvent(nextId[rank]++, KvEventType.STORED, rank, 0, false, 0, hashes, null, 0, 0));
        } else {
          long[] removed = live[rank];
          live[rank] = null;
          out.add(new KvEvent(nextId[rank]++, KvEventType.REMOVED, rank, 0, false, 0, removed, null, 0, 0));
        }
      }
      return out;
    }
  }

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    SharedStateSettings settings = SharedStateSettings.of(nats);
    deleteStream(settings, "AFFINITY_KV_" + cluster);
    RouterContext ctx = new RouterContext(Fleet.CONTEXT, dev.affinity.config.SubagentScope.CONTEXT, System::nanoTime,
        new PrefixIndex(1 << 22), RouterContext.DEFAULT_TTL, 0);
    Router router = new RouterFactory().create(new RouterConfig("kv_cache_aware", Location.unknown("bench"), Map.of(),
        Map.of()), "context_servers", ctx);
    WorkerInfo info = new WorkerInfo(32, HashAlgorithm.V1_BLOCK_KEY, ranks, true, 256);
    Histogram lag = new Histogram(60_000_000L, 3);
    AtomicLong measuredEvents = new AtomicLong();
    AtomicLong consumerThread = new AtomicLong(-1);
    long measureFrom = System.nanoTime() + (long) (warmUpSeconds * 1e9);
    long measureTo = measureFrom + (long) (seconds * 1e9);
    try (SharedKvEvents consumer = SharedKvEvents.start(settings, cluster, Optional.ofNullable(authKey))) {
      consumer.observe((workerId, events, lagMicros) -> {
        consumerThread.compareAndSet(-1, Thread.currentThread().getId());
        long now = System.nanoTime();
        if (now >= measureFrom && now < measureTo && lagMicros >= 0) {
          lag.recordValue(Math.min(lagMicros, lag.getHighestTrackableValue()));
          measuredEvents.addAndGet(events);
        }
      });
      List<WorkerKvPublisher> publishers = new ArrayList<>();
      try {
        for (int w = 0; w < workers; w++) {
          String id = "bench-" + w;
          router.addWorker(new dev.affinity.bench.jmh.RouterDecisionBenchmark.BenchWorker(id, info));
          String key = id + "@lagbench";
          consumer.registerPublisher(key, id, router);
          Generator g = new Generator(ranks, blocksPerEvent, (double) eventsPerSecond / workers, w);
          publishers.add(WorkerKvPublisher.start(settings, cluster,
              Optional.ofNullable(authKey).flatMap(InternalAuth::ofNullable), key, 32, g::drain));
        }
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        sleepUntil(measureFrom);
        Map<String, Long> cpuAtStart = cpuByThreadGroup(threads);
        long processCpuAtStart = processCpuNanos();
        long appliedAtStart = consumer.applied();
        long consumerId = consumerThread.get();
        long consumerCpuAtStart = consumerId < 0 ? 0 : threads.getThreadCpuTime(consumerId);
        sleepUntil(measureTo);
        Map<String, Long> cpuAtEnd = cpuByThreadGroup(threads);
        long consumerCpu = consumerId < 0 ? 0 : threads.getThreadCpuTime(consumerId) - consumerCpuAtStart;
        long processCpu = processCpuNanos() - processCpuAtStart;
        long batches = consumer.applied() - appliedAtStart;
        long events = measuredEvents.get();
        long published = publishers.stream().mapToLong(WorkerKvPublisher::events).sum();
        out.printf("shared-kv-lag: %d events/s from %d workers x %d ranks (%d blocks per event), %s s warm-up, %s s "
            + "measured, %s%n", eventsPerSecond, workers, ranks, blocksPerEvent, warmUpSeconds, seconds,
            authKey == null ? "unsigned" : "HMAC-signed");
        out.printf("  applied %d events in %d batches (%.1f events per batch); published %d in all%n", events, batches,
            batches == 0 ? 0.0 : (double) events / batches, published);
        out.printf("  lag (publish -> index), ms: p50 %.2f  p90 %.2f  p99 %.2f  p99.9 %.2f  max %.2f%n",
            lag.getValueAtPercentile(50) / 1000.0, lag.getValueAtPercentile(90) / 1000.0,
            lag.getValueAtPercentile(99) / 1000.0, lag.getValueAtPercentile(99.9) / 1000.0, lag.getMaxValue() / 1000.0);
        ThreadInfo ti = consumerId < 0 ? null : threads.getThreadInfo(consumerId);
        String consumerName = ti == null ? "none before the warm-up ended" : ti.getThreadName();
        out.printf("  CPU per event, us: the consumer's thread (%s: verify, parse, apply) %.2f; the whole process "
            + "(publishers and generators included) %.2f%n", consumerName,
            events == 0 ? 0.0 : consumerCpu / 1000.0 / events, events == 0 ? 0.0 : processCpu / 1000.0 / events);
        out.println("  CPU by thread group, ms:");
        for (Map.Entry<String, Long> e : cpuAtEnd.entrySet()) {
          long d = e.getValue() - cpuAtStart.getOrDefault(e.getKey(), 0L);
          if (d > 1_000_000) {
            out.printf("    %-40s %8.1f%n", e.getKey(), d / 1e6);
          }
        }
        out.flush();
      } finally {
        for (WorkerKvPublisher p : publishers) {
          p.close();
        }
      }
    }
    return 0;
  }

  /** A stream an earlier run left: replaying it would be measured as lag. */
  private static void deleteStream(SharedStateSettings settings, String stream) throws Exception {
    try (io.nats.client.Connection c = io.nats.client.Nats.connect(settings.servers().get(0))) {
      c.jetStreamManagement().deleteStream(stream);
    } catch (io.nats.client.JetStreamApiException e) {
      // not there
    }
  }

  private static void sleepUntil(long nanoTime) throws InterruptedException {
    long left;
    while ((left = nanoTime - System.nanoTime()) > 0) {
      Thread.sleep(Math.max(1, left / 1_000_000));
    }
  }

  /** Thread CPU summed by name with its digits dropped (jnats numbers its threads). */
  private static Map<String, Long> cpuByThreadGroup(ThreadMXBean threads) {
    Map<String, Long> out = new TreeMap<>();
    for (long id : threads.getAllThreadIds()) {
      ThreadInfo ti = threads.getThreadInfo(id);
      long cpu = threads.getThreadCpuTime(id);
      if (ti != null && cpu > 0) {
        out.merge(group(ti.getThreadName()), cpu, Long::sum);
      }
    }
    return out;
  }

  private static String group(String threadName) {
    return threadName.replaceAll("[0-9]+", "#");
  }

  private static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
  }
}
