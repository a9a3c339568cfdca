package dev.affinity.server.fleet;

import dev.affinity.config.DisaggConfig;
import dev.affinity.config.ServerSection;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.routing.Router;
import dev.affinity.server.shared.SharedKvEvents;
import dev.affinity.server.worker.HttpWorker;
import dev.affinity.server.worker.HttpWorkerSettings;
import dev.affinity.server.worker.WorkerSetupException;
import dev.affinity.worker.Worker;
import io.netty.channel.EventLoopGroup;
import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The remote (trtllm-serve or Affinity worker process) workers of a fleet: each is connected
 * ({@code /server_info}), added to the fleet's router, fed into its prefix index ({@code /kv_cache_events}, one
 * poller per worker) and health-checked ({@link #join}). Static {@code urls} are joined at start, and a worker
 * that is not up yet is retried in the background until it answers ({@link #connect}); workers of a
 * {@code disagg_cluster} join and {@link #retire} as their keys come and go. The workers' connections live on
 * the frontend's event loops ({@code loops}), at most {@code affinity.worker_max_connections} per worker.
 */
final class RemoteWorkers {
  private static final Logger log = LoggerFactory.getLogger(RemoteWorkers.class);
  static final Duration RETRY = Duration.ofSeconds(2);
  static final Duration HEALTH = Duration.ofSeconds(5);
  /** How often a retired worker is checked for requests still in flight. */
  static final Duration DRAIN_POLL = Duration.ofMillis(200);

  private RemoteWorkers() {}

  /** A worker in a router: the worker and its health-check schedule. */
  record Joined(HttpWorker worker, ScheduledFuture<?> health) {}

  /** The settings of a worker at {@code url} with the config's internal auth key. */
  static HttpWorkerSettings settings(String url, DisaggConfig config) {
    HttpWorkerSettings settings = HttpWorkerSettings.of(url).withMaxConnections(config.affinity().workerMaxConnections());
    return config.internalRequestAuthKey().map(settings::withAuthKey).orElse(settings);
  }

  /** Connects the section's workers (now or later); {@code joined} receives each one once it is up. */
  static void connect(ServerSection section, DisaggConfig config, ProtocolCodec codec, Router router,
      EventLoopGroup loops, ScheduledExecutorService background, SharedKvEvents shared, Consumer<Worker> joined) {
    for (String url : section.urls()) {
      tryConnect(settings(url, config), config, codec, router, loops, background, shared, joined);
    }
  }

  private static void tryConnect(HttpWorkerSettings settings, DisaggConfig config, ProtocolCodec codec, Router router,
      EventLoopGroup loops, ScheduledExecutorService background, SharedKvEvents shared, Consumer<Worker> joined) {
    try {
      joined.accept(join(settings, config, codec, router, loops, background, shared).worker());
    } catch (WorkerSetupException e) {
      log.warn("worker {} is not ready ({}); retrying in {} s", settings.workerId(), e.getMessage(), RETRY.toSeconds());
      if (!background.isShutdown()) {
        background.schedule(() -> tryConnect(settings, config, codec, router, loops, background, shared, joined),
            RETRY.toMillis(), TimeUnit.MILLISECONDS);
      }
    }
  }

  /**
   * Connects one worker ({@code /server_info}) and puts it in the router, with its KV events (polled here, or with
   * {@code shared} from the shared stream) and health checks.
   */
  static Joined join(HttpWorkerSettings settings, DisaggConfig config, ProtocolCodec codec, Router router,
      EventLoopGroup loops, ScheduledExecutorService background, SharedKvEvents shared) throws WorkerSetupException {
    HttpWorker w = HttpWorker.connect(settings, codec, loops);
    warnIfUnsalted(w, config);
    router.addWorker(w);
    if (shared != null) {
      shared.register(w, router);
    } else if (!router.usesKvEvents()) {
      // The fleet's router looks no prefix up (load_balancing, round_robin, conversation): its workers' KV events
      // are not polled. Both Affinity's executors and TensorRT-LLM's buffer them in a bounded queue.
      log.debug("worker {}: the {} router reads no KV events; they are not polled", w.id(), router.type());
    } else if (w.features().kvEventsSubject().isPresent()) {
      log.warn("worker {} publishes its KV events to NATS ({}) and this frontend has no affinity.shared_state: its "
          + "prefix index of the worker stays empty", w.id(), w.features().kvEventsSubject().get());
    } else {
      w.onKvEvents(events -> router.onKvEvents(w.id(), events));
      w.startKvEventPolling(HttpWorkerSettings.KV_EVENT_POLL);
    }
    ScheduledFuture<?> health = background.scheduleWithFixedDelay(w::checkHealth, HEALTH.toMillis(), HEALTH.toMillis(),
        TimeUnit.MILLISECONDS);
    log.info("worker {} joined ({} tokens per block, {})", w.id(), w.info().tokensPerBlock(), w.info().hashAlgorithm().wireName());
    return new Joined(w, health);
  }

  /**
   * Says at a worker's join, under {@code tenant_isolation}, that it cannot take a completion's KV cache salt (a stock
   * trtllm-serve worker: its {@code /server_info} does not offer it), so tenants' completions share its cache (their
   * usage reports 0 cached tokens). The configuration cannot tell a stock worker from an Affinity one; its join can.
   */
  private static void warnIfUnsalted(HttpWorker w, DisaggConfig config) {
    if (config.affinity().tenantIsolation() && !w.features().completionCacheSalt()) {
      log.warn("worker {} takes no KV cache salt on completions (a stock trtllm-serve worker): under tenant_isolation "
          + "tenants' /v1/completions prompts share its cache, and their usage reports 0 cached tokens; chats are "
          + "salted", w.id());
    }
  }

  /**
   * Takes a worker out of its router (its selections are released, its conversations re-pin on their next
   * turn) and closes it once the requests it still serves have finished, or after {@code drain}.
   */
  static void retire(Joined joined, Router router, ScheduledExecutorService background, SharedKvEvents shared,
      Duration drain, Runnable closed) {
    HttpWorker w = joined.worker();
    router.removeWorker(w.id());
    joined.health().cancel(false);
    if (shared != null) {
      shared.unregister(w);
    }
    w.stopKvEventPolling();
    long deadline = System.nanoTime() + drain.toNanos();
    log.info("worker {} left; closing it once its {} requests in flight are done", w.id(), w.inFlight());
    closeWhenIdle(w, background, deadline, closed);
  }

  private static void closeWhenIdle(HttpWorker w, ScheduledExecutorService background, long deadline, Runnable closed) {
    if (w.inFlight() == 0 || System.nanoTime() - deadline > 0 || background.isShutdown()) {
      if (w.inFlight() > 0) {
        log.warn("worker {} closed with {} requests still in flight", w.id(), w.inFlight());
      }
      w.close();
      closed.run();
      return;
    }
    background.schedule(() -> closeWhenIdle(w, background, deadline, closed), DRAIN_POLL.toMillis(), TimeUnit.MILLISECONDS);
  }
}
