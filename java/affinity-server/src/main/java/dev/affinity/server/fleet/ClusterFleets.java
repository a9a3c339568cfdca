package dev.affinity.server.fleet;

import dev.affinity.config.DisaggConfig;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.routing.Router;
import dev.affinity.server.cluster.ClockSync;
import dev.affinity.server.cluster.ClusterMembership;
import dev.affinity.server.cluster.ClusterWorker;
import dev.affinity.server.cluster.ServerRole;
import dev.affinity.server.worker.HttpWorker;
import dev.affinity.server.worker.HttpWorkerSettings;
import dev.affinity.worker.Worker;
import io.netty.channel.EventLoopGroup;
import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Consumer;

/**
 * With a {@code disagg_cluster}: cluster workers join and leave the fleets' routers as their keys come and go. A
 * worker that joins is connected (its clock offset checked), added to its role's router, its models fetched (context
 * workers) and its gauges registered; one that leaves is drained out of the router within the request timeout, then
 * closed.
 */
final class ClusterFleets implements ClusterMembership.Fleets {
  private final ClockSync clock = new ClockSync(Duration.ofSeconds(5));
  private final DisaggConfig config;
  private final ProtocolCodec codec;
  private final Router ctxRouter;
  private final Router genRouter;
  private final EventLoopGroup io;
  private final ScheduledExecutorService background;
  private final WorkerModels models;
  private final WorkerGauges gauges;
  private final Consumer<Worker> joined;
  private final Consumer<Worker> left;
  /** The shared KV events (affinity.shared_state), or null. */
  private final dev.affinity.server.shared.SharedKvEvents shared;

  /** {@code joined} and {@code left} keep the server's list of workers. */
  ClusterFleets(DisaggConfig config, ProtocolCodec codec, Router ctxRouter, Router genRouter, EventLoopGroup io,
      ScheduledExecutorService background, WorkerModels models, WorkerGauges gauges, Consumer<Worker> joined,
      Consumer<Worker> left, dev.affinity.server.shared.SharedKvEvents shared) {
    this.shared = shared;
    this.config = config;
    this.codec = codec;
    this.ctxRouter = ctxRouter;
    this.genRouter = genRouter;
    this.io = io;
    this.background = background;
    this.models = models;
    this.gauges = gauges;
    this.joined = joined;
    this.left = left;
  }

  @Override
  public Object join(ClusterWorker w) throws Exception {
    HttpWorkerSettings settings = RemoteWorkers.settings(w.address(), config);
    clock.align(settings.baseUrl().toString());
    RemoteWorkers.Joined j = RemoteWorkers.join(settings, config, codec, routerOf(w.role()), io, background, shared);
    HttpWorker hw = j.worker();
    if (w.role() == ServerRole.CONTEXT) {
      models.fetch(hw.id(), settings.baseUrl());
    }
    joined.accept(hw);
    gauges.register(hw);
    return j;
  }

  @Override
  public void leave(ClusterWorker w, Object joinedWorker) {
    RemoteWorkers.Joined j = (RemoteWorkers.Joined) joinedWorker;
    HttpWorker hw = j.worker();
    models.remove(hw.id());
    gauges.remove(hw);
    RemoteWorkers.retire(j, routerOf(w.role()), background, shared,
        Duration.ofMillis((long) (config.affinity().requestTimeoutSeconds() * 1000)), () -> left.accept(hw));
  }

  private Router routerOf(ServerRole role) {
    return role == ServerRole.CONTEXT ? ctxRouter : genRouter;
  }
}
