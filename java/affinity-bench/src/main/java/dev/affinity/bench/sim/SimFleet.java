package dev.affinity.bench.sim;

import dev.affinity.admission.RequestAdmission;
import dev.affinity.config.DisaggConfig;
import dev.affinity.config.ServerSection;
import dev.affinity.disagg.DisaggService;
import dev.affinity.disagg.RequestIds;
import dev.affinity.executor.ExecutorResponse;
import dev.affinity.nativebridge.HandoffDomain;
import dev.affinity.nativebridge.NativeExecutor;
import dev.affinity.nativebridge.worker.NativeWorker;
import dev.affinity.routing.Fleet;
import dev.affinity.server.fleet.EmbeddedWorkers;
import dev.affinity.server.fleet.Orchestration;
import dev.affinity.worker.TokenCodec;
import dev.affinity.routing.LoadShare;
import dev.affinity.routing.RoutedShare;
import dev.affinity.routing.Router;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;

/**
 * A whole disaggregated fleet in virtual time, in this process and on one thread: every context and
 * generation instance of the configuration's {@code affinity.workers} pools is a CPU executor (through
 * JNI) on a virtual clock behind a {@link NativeWorker}, and the routers and {@link DisaggService} are
 * built by {@link Orchestration#build}, exactly as {@code serve} builds them (one set per frontend,
 * {@link Frontends}). KV transfer between
 * instances is the generation executors' transfer-time model; the fleet's executors and workers share
 * one {@link HandoffDomain}, so that a generation pull frees its context's KV at once and two fleets in
 * one JVM stay apart.
 *
 * <p>{@link #run()} is the event loop: it repeatedly takes the earliest of the next scheduled task
 * (arrivals, think times, timeouts) and the next iteration end of any executor, moves virtual time
 * there, and delivers the responses and KV events that became ready, until nothing is left. Ties go
 * to tasks first, then executors in instance order, so a run is a pure function of its inputs.
 */
public final class SimFleet implements AutoCloseable {
  private final DisaggConfig config;
  private final VirtualScheduler clock = new VirtualScheduler();
  private final VirtualExecutor.Timeline timeline = new VirtualExecutor.Timeline();
  private final List<VirtualExecutor> executors = new ArrayList<>();
  private final List<NativeWorker> workers = new ArrayList<>();
  private final HandoffDomain handoff = new HandoffDomain();
  private final Frontends frontends;
  private final List<Frontend> replicas = new ArrayList<>();
  private final BiConsumer<VirtualExecutor, ExecutorResponse> observer;
  /** The last load report delivered, by fleet and frontend. */
  private final Map<String, List<LoadShare>> lastReports = new HashMap<>();

  /**
   * One frontend's routing state: its routers and {@link DisaggService} ({@link Orchestration}) and its admission step.
   */
  public record Frontend(int index, Orchestration orchestration, RequestAdmission admission) {
    /** The name it shares its loads under. */
    public String peerId() {
      return "frontend-" + index;
    }
  }

  /**
   * One frontend ({@link Frontends#ONE}).
   *
   * @param observer sees every executor response (with the instance it came from) before its worker
   *     does; the run's executor-level metrics come from here
   */
  public SimFleet(DisaggConfig config, BiConsumer<VirtualExecutor, ExecutorResponse> observer) {
    this(config, Frontends.ONE, observer);
  }

  /**
   * A fleet routed by {@code frontends}: each has its own routers and service over the same workers; their KV events
   * reach every frontend (shared) or one each in turn (unshared). Loads are exchanged by {@link #shareLoads}, which the
   * caller schedules.
   */
  public SimFleet(DisaggConfig config, Frontends frontends, BiConsumer<VirtualExecutor, ExecutorResponse> observer) {
    this.config = config;
    this.frontends = frontends;
    this.observer = observer;
    TokenCodec codec = new IdTokenCodec();
    for (int i = 0; i < frontends.count(); i++) {
      // Each frontend its own process id: request ids stay unique across the frontends on one executor.
      Orchestration o = Orchestration.build(config, clock, clock::nowNanos, new RequestIds(config.nodeId(), i, clock::nowMillis));
      RequestAdmission a = RequestAdmission.of(config, RequestAdmission.ANY_MODEL, body -> workers.get(0).promptTokens(body));
      replicas.add(new Frontend(i, o, a));
    }
    try {
      for (Fleet fleet : Fleet.values()) {
        for (NativeWorker w : createWorkers(fleet, codec, replicas.get(0).orchestration().router(fleet).usesKvEvents())) {
          attach(w, fleet);
        }
      }
    } catch (RuntimeException e) {
      close();
      throw e;
    }
  }

  /**
   * Adds a worker to every frontend's router of its fleet. One frontend takes the worker's KV events as {@code serve}
   * does; several take each drained batch all (shared) or one each in turn (unshared).
   */
  private void attach(NativeWorker worker, Fleet fleet) {
    if (replicas.size() == 1) {
      replicas.get(0).orchestration().attach(worker, fleet);
      return;
    }
    List<Router> routers = new ArrayList<>();
    for (Frontend f : replicas) {
      Router r = f.orchestration().router(fleet);
      r.addWorker(worker);
      routers.add(r);
    }
    String id = worker.id();
    if (frontends.sharing()) {
      worker.onKvEvents(events -> {
        for (Router r : routers) {
          r.onKvEvents(id, events);
        }
      });
    } else {
      int[] next = {0};
      worker.onKvEvents(events -> {
        routers.get(next[0]).onKvEvents(id, events);
        next[0] = (next[0] + 1) % routers.size();
      });
    }
  }

  /**
   * One exchange of loads between sharing frontends: every frontend's routers take every other frontend's own
   * in-flight work ({@link Router#ownLoads}, all read before any is delivered) and the prefixes it routed since the
   * last exchange ({@link Router#routedSince}, for predict-on-route), as {@code SharedLoads} reports them. A load report
   * equal to the one a peer delivered last is not delivered again. Nothing happens unless the frontends share.
   */
  public void shareLoads() {
    if (!frontends.sharing()) {
      return;
    }
    for (Fleet fleet : Fleet.values()) {
      List<List<LoadShare>> reports = new ArrayList<>();
      List<List<RoutedShare>> routed = new ArrayList<>();
      for (Frontend f : replicas) {
        reports.add(f.orchestration().router(fleet).ownLoads());
        routed.add(f.orchestration().router(fleet).routedSince());
      }
      for (int from = 0; from < replicas.size(); from++) {
        List<LoadShare> report = reports.get(from);
        String key = fleet.name() + '/' + from;
        boolean newReport = !report.equals(lastReports.get(key));
        lastReports.put(key, report);
        String peer = replicas.get(from).peerId();
        for (int to = 0; to < replicas.size(); to++) {
          if (to == from) {
            continue;
          }
          Router r = replicas.get(to).orchestration().router(fleet);
          if (!routed.get(from).isEmpty()) {
            r.peerRouted(routed.get(from));
          }
          if (newReport) {
            r.peerLoads(peer, report);
          }
        }
      }
    }
  }

  /**
   * The fleet's executors on a virtual clock. KV events carry no tokens (in-process routers index
   * block hashes) and are off altogether when the fleet's router ignores them, unless the
   * configuration says otherwise.
   */
  private List<NativeWorker> createWorkers(Fleet fleet, TokenCodec codec, boolean kvEvents) {
    ServerSection section = fleet == Fleet.CONTEXT ? config.context() : config.generation();
    if (!section.isEmbedded()) {
      throw new IllegalArgumentException(section.name() + ": the simulator needs in-process workers (affinity.workers."
          + (fleet == Fleet.CONTEXT ? "context" : "generation") + "), not urls");
    }
    List<NativeWorker> out = new ArrayList<>();
    for (EmbeddedWorkers.Instance in : EmbeddedWorkers.instances(section)) {
      Map<String, Object> cfg = new LinkedHashMap<>(in.config());
      section(cfg, "clock").put("mode", "virtual");
      Map<String, Object> events = section(cfg, "kv_events");
      events.putIfAbsent("include_tokens", false);
      events.putIfAbsent("enabled", kvEvents);
      NativeExecutor ex = NativeExecutor.create(in.backend(), in.withConfig(cfg).configJson(), handoff);
      try {
        VirtualExecutor ve = new VirtualExecutor(in.name(), fleet, ex, clock, timeline, observer);
        NativeWorker w = NativeWorker.pumped(in.name(), ve, codec, 128, clock, handoff);
        executors.add(ve);
        workers.add(w);
        out.add(w);
      } catch (RuntimeException e) {
        ex.close();
        throw e;
      }
    }
    return out;
  }

  /** A mutable copy of the nested object {@code key} of {@code cfg} (empty when absent), put back in its place. */
  private static Map<String, Object> section(Map<String, Object> cfg, String key) {
    Map<String, Object> copy = new LinkedHashMap<>();
    if (cfg.get(key) instanceof Map<?, ?> m) {
      m.forEach((k, v) -> copy.put(String.valueOf(k), v));
    }
    cfg.put(key, copy);
    return copy;
  }

  public DisaggConfig config() {
    return config;
  }

  public VirtualScheduler clock() {
    return clock;
  }

  /** The first frontend's service (the only one's, with one frontend). */
  public DisaggService service() {
    return orchestration().service();
  }

  /** The first frontend's admission step, which simulated requests pass as the HTTP frontend's (any model name). */
  public RequestAdmission admission() {
    return replicas.get(0).admission();
  }

  /** The first frontend's routers and service. */
  public Orchestration orchestration() {
    return replicas.get(0).orchestration();
  }

  public Frontends frontendSettings() {
    return frontends;
  }

  /** The frontends, by index. */
  public List<Frontend> frontends() {
    return List.copyOf(replicas);
  }

  /** The instances in order: context then generation, each by index. */
  public List<NativeWorker> workers() {
    return List.copyOf(workers);
  }

  /** The executors, in the order of {@link #workers()}. */
  public List<VirtualExecutor> executors() {
    return List.copyOf(executors);
  }

  /** Whether any executor has an iteration to run. */
  public boolean busy() {
    for (VirtualExecutor e : executors) {
      if (e.nextIterationEndMicros() >= 0) {
        return true;
      }
    }
    return false;
  }

  /** Runs events until no task is pending and every executor is idle. */
  public void run() {
    while (step()) {
      // keep going
    }
  }

  /** Runs one event (a task or the iterations ending at the next time); false when nothing is left. */
  public boolean step() {
    deliverReady();
    long task = clock.nextTaskMicros();
    long iteration = -1;
    for (VirtualExecutor e : executors) {
      long end = e.nextIterationEndMicros();
      if (end >= 0 && (iteration < 0 || end < iteration)) {
        iteration = end;
      }
    }
    if (task < 0 && iteration < 0) {
      return false;
    }
    if (task >= 0 && (iteration < 0 || task <= iteration)) {
      clock.runNext();
    } else {
      long t = Math.max(iteration, clock.nowMicros());
      clock.advanceTo(t);
      for (VirtualExecutor e : executors) {
        long end = e.nextIterationEndMicros();
        if (end >= 0 && end <= t) {
          e.advanceTo(t);
        }
      }
    }
    deliverReady();
    return true;
  }

  /** Pumps every worker whose executor was touched, until a pass touches nothing more. */
  private void deliverReady() {
    boolean again = true;
    while (again) {
      again = false;
      for (int i = 0; i < executors.size(); i++) {
        if (executors.get(i).takeTouched()) {
          workers.get(i).pump();
          again = true;
        }
      }
    }
  }

  @Override
  public void close() {
    for (NativeWorker w : workers) {
      w.close();
    }
    handoff.close();
  }
}
