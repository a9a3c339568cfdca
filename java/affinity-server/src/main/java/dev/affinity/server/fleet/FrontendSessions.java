package dev.affinity.server.fleet;

import dev.affinity.config.DisaggConfig;
import dev.affinity.conversation.ParentLinks;
import dev.affinity.disagg.DisaggService;
import dev.affinity.frontend.CompletionHandler;
import dev.affinity.routing.PinKeeping;
import dev.affinity.routing.Router;
import dev.affinity.session.PinAndLinkRelease;
import dev.affinity.session.SessionLifecycleHandler;
import dev.affinity.session.SessionRegistry;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;
import dev.affinity.worker.Worker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The session lifecycle of a frontend: the sessions of the requests served, ended by the session-final header or
 * expired when idle, releasing the pins of the pin-keeping routers and the parent links and ending the session on
 * the workers; the handler that sees every request go by; their metrics.
 *
 * @param registry the live sessions
 * @param handler the orchestration's handler wrapped in the session bookkeeping
 */
record FrontendSessions(SessionRegistry registry, CompletionHandler handler) {
  private static final Logger log = LoggerFactory.getLogger(FrontendSessions.class);

  /**
   * Starts the lifecycle: idle expiry runs on {@code work} every quarter of {@code affinity.session_idle_ttl_seconds}
   * (1 s to 60 s); each session that ends is ended on the {@code workers} of the moment ({@link #endOnWorkers}) and
   * told to {@code ended} (the frontend's kept prompt of the conversation goes).
   */
  static FrontendSessions start(DisaggConfig config, DisaggService service, List<Router> routers, ParentLinks parentLinks,
      Supplier<List<Worker>> workers, Consumer<String> ended, ScheduledExecutorService work, MeterRegistry meters) {
    List<PinKeeping> keeping = new ArrayList<>();
    for (Router r : routers) {
      if (r instanceof PinKeeping p) {
        keeping.add(p);
      }
    }
    long ttlNanos = (long) (config.affinity().sessionIdleTtlSeconds() * 1e9);
    SessionRegistry sessions = new SessionRegistry(ttlNanos, SessionRegistry.DEFAULT_MAX_SESSIONS, System::nanoTime,
        new PinAndLinkRelease(keeping, parentLinks).andThen(id -> endOnWorkers(workers.get(), id)).andThen(ended::accept));
    CompletionHandler handler = new SessionLifecycleHandler(service, sessions, config.affinity().sessionFinalHeader());
    long periodMillis = Math.max(1000, Math.min(60_000, ttlNanos / 4_000_000));
    work.scheduleWithFixedDelay(() -> {
      int n = sessions.expireIdle();
      if (n > 0) {
        log.debug("{} idle sessions expired", n);
      }
    }, periodMillis, periodMillis, TimeUnit.MILLISECONDS);
    Gauge.builder("affinity_sessions_live", sessions, SessionRegistry::live)
        .description("sessions (conversation ids) seen and neither ended nor expired").register(meters);
    FunctionCounter.builder("affinity_session_expirations", sessions, SessionRegistry::expirations)
        .description("sessions expired after affinity.session_idle_ttl_seconds without a request").register(meters);
    FunctionCounter.builder("affinity_sessions_ended", sessions, SessionRegistry::ended)
        .description("sessions their clients ended (affinity.session_final_header: true)").register(meters);
    for (int i = 0; i < routers.size(); i++) {
      if (routers.get(i) instanceof PinKeeping p) {
        Gauge.builder("affinity_session_pins", p, PinKeeping::pinCount).description("routing keys pinned")
            .tag("fleet", i == 0 ? "context" : "generation").register(meters);
      }
    }
    Gauge.builder("affinity_parent_links", parentLinks, ParentLinks::size)
        .description("sub-agent parent links known").register(meters);
    return new FrontendSessions(sessions, handler);
  }

  /**
   * An ended or expired session's KV on the workers that keep some per conversation (embedded CPU executors with
   * {@code block_reuse.policy: per_conversation}: {@link Worker#endSession}); remote workers keep theirs until
   * their own eviction.
   */
  private static void endOnWorkers(List<Worker> workers, String sessionId) {
    for (Worker w : workers) {
      try {
        w.endSession(sessionId);
      } catch (RuntimeException e) {
        log.debug("worker {}: ending session {} failed: {}", w.id(), sessionId, e.toString());
      }
    }
  }
}
