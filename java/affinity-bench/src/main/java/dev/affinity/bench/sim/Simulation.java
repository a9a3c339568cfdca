package dev.affinity.bench.sim;

import dev.affinity.bench.drive.IdealCache;
import dev.affinity.bench.drive.PooledCache;
import dev.affinity.bench.drive.Workload;
import dev.affinity.bench.drive.WorkloadDriver;
import dev.affinity.bench.metrics.LoadSeries;
import dev.affinity.bench.metrics.RequestRecord;
import dev.affinity.bench.metrics.RunMetrics;
import dev.affinity.bench.metrics.RunResult;
import dev.affinity.bench.metrics.Slo;
import dev.affinity.bench.metrics.ZeroQueueBound;
import dev.affinity.bench.trace.BlockTokens;
import dev.affinity.config.DisaggConfig;
import dev.affinity.routing.Fleet;
import dev.affinity.executor.ExecutorResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.IntConsumer;
import org.HdrHistogram.Histogram;

/**
 * One simulated run: a configuration's fleet ({@link SimFleet}) plays a workload in virtual time and
 * the result is measured. The same configuration, workload and seed give the same result.
 */
public final class Simulation {
  /** The header a simulated agent sends its parent's session id in when the configuration names none. */
  public static final String DEFAULT_PARENT_HEADER = "X-Dynamo-Parent-Session-ID";

  private final DisaggConfig config;
  private final Slo slo;
  private final Duration sampleEvery;
  private final boolean stream;
  private final Frontends frontends;

  /** One frontend ({@link Frontends#ONE}). */
  public Simulation(DisaggConfig config, Slo slo, Duration sampleEvery, boolean stream) {
    this(config, slo, sampleEvery, stream, Frontends.ONE);
  }

  /**
   * @param sampleEvery how often (virtual time) the load of every rank is sampled
   * @param stream      whether requests stream (one response per token: slower to simulate, same
   *                    times; see {@link SimTransport})
   * @param frontends   how many frontends route, and whether they share KV events and loads
   */
  public Simulation(DisaggConfig config, Slo slo, Duration sampleEvery, boolean stream, Frontends frontends) {
    this.config = Objects.requireNonNull(config, "config");
    this.slo = Objects.requireNonNull(slo, "slo");
    if (sampleEvery.isNegative() || sampleEvery.isZero()) {
      throw new IllegalArgumentException("sampleEvery must be > 0, got " + sampleEvery);
    }
    this.sampleEvery = sampleEvery;
    this.stream = stream;
    this.frontends = Objects.requireNonNull(frontends, "frontends");
  }

  /**
   * Runs {@code workload}; {@code seed} salts the prompt tokens of the workload's blocks (and so
   * every hash), {@code progress} sees the number of completed requests as they complete.
   */
  public RunResult run(String policy, Workload workload, long seed, IntConsumer progress) {
    return run(policy, workload, seed, progress, fleet -> { });
  }

  /** As {@link #run(String, Workload, long, IntConsumer)}; {@code atEnd} sees the fleet after the run, before it closes. */
  RunResult run(String policy, Workload workload, long seed, IntConsumer progress, Consumer<SimFleet> atEnd) {
    long wallStart = System.nanoTime();
    Histogram ctxQueue = RunMetrics.histogram();
    Histogram genQueue = RunMetrics.histogram();
    SimTransport[] transportRef = new SimTransport[1];
    try (SimFleet fleet = new SimFleet(config, frontends, (ex, r) -> {
      observe(ex, r, ctxQueue, genQueue);
      transportRef[0].onExecutorResponse(r);
    })) {
      VirtualScheduler clock = fleet.clock();
      String session = config.affinity().sessionHeaders().isEmpty() ? "x-session-id" : config.affinity().sessionHeaders().get(0);
      String parent = config.subagentHeader().orElse(DEFAULT_PARENT_HEADER);
      SimTransport transport = new SimTransport(fleet, new BlockTokens(32000, seed), config.affinity().modelOrDefault(), session, parent,
          stream);
      transportRef[0] = transport;
      int kvBlock = fleet.workers().get(0).info().tokensPerBlock();
      WorkloadDriver[] holder = new WorkloadDriver[1];
      WorkloadDriver driver = new WorkloadDriver(transport, clock, new IdealCache(kvBlock),
          new PooledCache(contextCapacityTokens(fleet), kvBlock), rec -> progress.accept(holder[0].completed()));
      holder[0] = driver;
      // The load exchange between sharing frontends is the one other periodic task: each sees the other pending.
      int periodic = frontends.sharing() ? 1 : 0;
      Sampler sampler = new Sampler(fleet, driver, periodic);
      workload.start(driver);
      sampler.sample();
      if (frontends.sharing()) {
        new LoadExchange(fleet, driver, periodic).exchange();
      }
      fleet.run();
      if (!driver.finished()) {
        throw new IllegalStateException("simulation ended with " + (driver.planned() - driver.completed())
            + " requests unanswered (a request lost by orchestration?)");
      }
      List<RequestRecord> records = driver.records();
      LoadSeries load = sampler.series();
      ZeroQueueBound bound = zeroQueueBound(fleet);
      RunMetrics metrics = RunMetrics.of(records, load, ctxQueue, genQueue, slo, bound);
      atEnd.accept(fleet);
      long lastAnswerUs = records.stream().mapToLong(r -> r.sendUs() + r.e2eUs()).max().orElse(0);
      return new RunResult(policy, workload.name(), seed, metrics, records, load, (System.nanoTime() - wallStart) / 1e9,
          lastAnswerUs / 1e6, bound);
    }
  }

  /**
   * The zero-queue bound of the fleet: the timing of its first context and first generation executor (a fleet
   * whose instances differ in timing gets its first instances' bound).
   */
  static ZeroQueueBound zeroQueueBound(SimFleet fleet) {
    String ctx = null;
    String gen = null;
    for (VirtualExecutor e : fleet.executors()) {
      if (e.fleet() == Fleet.CONTEXT && ctx == null) {
        ctx = e.describe();
      } else if (e.fleet() == Fleet.GENERATION && gen == null) {
        gen = e.describe();
      }
    }
    return ZeroQueueBound.fromDescriptions(ctx, gen != null ? gen : ctx);
  }

  /** The KV capacity of every context instance's every rank, in tokens: the pooled bound's cache size. */
  static long contextCapacityTokens(SimFleet fleet) {
    long tokens = 0;
    for (VirtualExecutor e : fleet.executors()) {
      if (e.fleet() == Fleet.CONTEXT) {
        for (int rank = 0; rank < e.numRanks(); rank++) {
          var stats = e.kvCacheStats(rank);
          tokens += stats.maxNumBlocks() * stats.tokensPerBlock();
        }
      }
    }
    return tokens;
  }

  /**
   * Queue waits of finished legs: from arrival at the executor to admission into its batch (a
   * generation leg's KV transfer starts at admission, once it has a slot and KV blocks).
   */
  private static void observe(VirtualExecutor ex, ExecutorResponse r, Histogram ctxQueue, Histogram genQueue) {
    if (!r.isFinal() || r.isError() || r.metrics().scheduledUs() < 0 || r.metrics().arrivalUs() < 0) {
      return;
    }
    long wait = r.metrics().scheduledUs() - r.metrics().arrivalUs();
    Histogram h = ex.fleet() == Fleet.CONTEXT ? ctxQueue : genQueue;
    h.recordValue(Math.max(0, Math.min(wait, h.getHighestTrackableValue())));
  }

  /**
   * Hands every sharing frontend the others' loads every {@link Frontends#shareEvery} of virtual time while the
   * workload runs (as long as anything but itself and the sampler is left to happen).
   */
  private final class LoadExchange {
    private final SimFleet fleet;
    private final WorkloadDriver driver;
    private final int otherPeriodic;

    LoadExchange(SimFleet fleet, WorkloadDriver driver, int otherPeriodic) {
      this.fleet = fleet;
      this.driver = driver;
      this.otherPeriodic = otherPeriodic;
    }

    void exchange() {
      fleet.shareLoads();
      if (!driver.finished() && (fleet.clock().pending() > otherPeriodic || fleet.busy())) {
        fleet.clock().schedule(this::exchange, frontends.shareEvery());
      }
    }
  }

  /** Samples the load of every rank while the workload runs. */
  private final class Sampler {
    private final SimFleet fleet;
    private final WorkloadDriver driver;
    private final List<Long> times = new ArrayList<>();
    private final List<int[][]> loads = new ArrayList<>();
    private final int otherPeriodic;

    Sampler(SimFleet fleet, WorkloadDriver driver, int otherPeriodic) {
      this.fleet = fleet;
      this.driver = driver;
      this.otherPeriodic = otherPeriodic;
    }

    void sample() {
      List<VirtualExecutor> executors = fleet.executors();
      int[][] now = new int[executors.size()][];
      for (int i = 0; i < executors.size(); i++) {
        VirtualExecutor e = executors.get(i);
        now[i] = new int[e.numRanks()];
        for (int rank = 0; rank < now[i].length; rank++) {
          now[i][rank] = (int) e.kvCacheStats(rank).activeRequests();  // running or waiting for admission
        }
      }
      times.add(fleet.clock().nowMicros());
      loads.add(now);
      // Only while anything else is left to happen: a lost request must end the run (and fail it
      // below), not keep the sampler ticking forever.
      if (!driver.finished() && (fleet.clock().pending() > otherPeriodic || fleet.busy())) {
        fleet.clock().schedule(this::sample, sampleEvery);
      }
    }

    LoadSeries series() {
      List<String> names = fleet.executors().stream().map(VirtualExecutor::name).toList();
      int ctx = (int) fleet.executors().stream().filter(e -> e.fleet() == Fleet.CONTEXT).count();
      long[] t = times.stream().mapToLong(Long::longValue).toArray();
      return new LoadSeries(names, ctx, t, loads.toArray(new int[0][][]));
    }
  }
}
