package dev.affinity.server.fleet;

import dev.affinity.config.DisaggConfig;
import dev.affinity.config.ServerSection;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.routing.Router;
import dev.affinity.server.worker.HttpWorker;
import dev.affinity.server.worker.HttpWorkerSettings;
import dev.affinity.server.worker.WorkerSetupException;
import dev.affinity.worker.Worker;
import io.netty.channel.EventLoopGroup;
import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The remote (trtllm-serve or Affinity worker process) workers of a fleet, from its {@code urls}:
 * each is connected ({@code /server_info}), added to the fleet's router, fed into its prefix index
 * ({@code /kv_cache_events}, one poller per worker) and health-checked. A worker that is not up yet
 * is retried in the background and joins the router when it answers. The workers' connections live on the
 * frontend's event loops ({@code loops}), at most {@code affinity.worker_max_connections} per worker.
 */
final class RemoteWorkers {
  private static final Logger log = LoggerFactory.getLogger(RemoteWorkers.class);
  static final Duration RETRY = Duration.ofSeconds(2);
  static final Duration HEALTH = Duration.ofSeconds(5);
  static final Duration KV_POLL = Duration.ofMillis(500);

  private RemoteWorkers() {}

  /** Connects the section's workers (now or later); {@code joined} receives each one once it is up. */
  static void connect(ServerSection section, DisaggConfig config, ProtocolCodec codec, Router router,
      EventLoopGroup loops, ScheduledExecutorService background, Consumer<Worker> joined) {
    for (String url : section.urls()) {
      HttpWorkerSettings settings = HttpWorkerSettings.of(url)
          .withMaxConnections(config.affinity().workerMaxConnections());
      if (config.internalRequestAuthKey().isPresent()) {
        settings = settings.withAuthKey(config.internalRequestAuthKey().get());
      }
      tryConnect(settings, codec, router, loops, background, joined);
    }
  }

  private static void tryConnect(HttpWorkerSettings settings, ProtocolCodec codec, Router router,
      EventLoopGroup loops, ScheduledExecutorService background, Consumer<Worker> joined) {
    try {
      HttpWorker w = HttpWorker.connect(settings, codec, loops);
      router.addWorker(w);
      w.onKvEvents(events -> router.onKvEvents(w.id(), events));
      w.startKvEventPolling(KV_POLL);
      background.scheduleWithFixedDelay(w::checkHealth, HEALTH.toMillis(), HEALTH.toMillis(), TimeUnit.MILLISECONDS);
      joined.accept(w);
      log.info("worker {} joined ({} tokens per block, {})", w.id(), w.info().tokensPerBlock(), w.info().hashAlgorithm().wireName());
    } catch (WorkerSetupException e) {
      log.warn("worker {} is not ready ({}); retrying in {} s", settings.workerId(), e.getMessage(), RETRY.toSeconds());
      if (!background.isShutdown()) {
        background.schedule(() -> tryConnect(settings, codec, router, loops, background, joined), RETRY.toMillis(),
            TimeUnit.MILLISECONDS);
      }
    }
  }
}
