package dev.affinity.agent;

import dev.affinity.config.AgentSettings;
import dev.affinity.executor.KvRetention;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Selection;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * Agent-aware scheduling as the orchestration uses it (docs/agent-scheduling.md): it follows each session
 * ({@link AgentSessions}), gives each leg its request priority ({@link AgentPriority}) and each context leg its KV
 * retention ({@link KvRetentionPolicy}). Either part may be off. Thread-safe.
 */
public final class AgentScheduling {
  /** The window of the retention policy's measured rates. */
  static final double RATE_WINDOW_SECONDS = 60;

  private final AgentSessions sessions;
  private final AgentPriority priority;
  private final KvRetentionPolicy retention;
  private final LongSupplier nanoClock;

  /**
   * @param idleSeconds a session without a call for this long starts anew ({@code session_idle_ttl_seconds})
   * @param nanoClock   the orchestration's clock (virtual in the fleet simulator)
   */
  public AgentScheduling(AgentSettings settings, double idleSeconds, LongSupplier nanoClock) {
    this.sessions = new AgentSessions(1 << 20, idleSeconds);
    this.priority = settings.priority() ? new AgentPriority(settings.priorityPromotionSeconds()) : null;
    this.retention = settings.kvRetention() ? new KvRetentionPolicy(RATE_WINDOW_SECONDS) : null;
    this.nanoClock = Objects.requireNonNull(nanoClock, "nanoClock");
  }

  /** Whether anything is on: off, the orchestration skips every call. */
  public boolean active() {
    return priority != null || retention != null;
  }

  public long now() {
    return nanoClock.getAsLong();
  }

  /** A client request of {@code session} (null: none; {@code parent} non-null for a sub-agent) arrived. */
  public AgentSessions.Standing arrive(String session, String parent) {
    return sessions.arrive(session, parent, now());
  }

  /** The priority record of a leg about to be sent where {@code selection} points; null when priority is off. */
  public AgentPriority.Leg sendLeg(AgentSessions.Standing standing, Fleet fleet, Selection selection) {
    return priority == null ? null : priority.send(standing, fleet.name() + ":" + selection.candidate(), now());
  }

  /** The leg was answered or ended otherwise. */
  public void legEnded(AgentPriority.Leg leg) {
    if (leg != null && priority != null) {
      priority.ended(leg);
    }
  }

  /**
   * The retention of a context leg of {@code session} where {@code selection} points, whose rank holds
   * {@code capacity} tokens of KV (0: unknown; asked only when needed); null when retention is off or the request has
   * no session.
   */
  public KvRetention retentionFor(String session, Selection selection, LongSupplier capacity) {
    if (retention == null || session == null) {
      return null;
    }
    long capacityTokens = capacity.getAsLong();
    String place = selection.candidate().toString();
    long now = now();
    if (Double.isInfinite(retention.survivalSeconds(place, capacityTokens, now))) {
      return KvRetention.defaults();  // LRU keeps everything there: no history needed
    }
    return retention.decide(sessions.history(session, KvRetentionPolicy.MIN_OWN_PAUSES), place, capacityTokens, now);
  }

  /**
   * A context leg finished: it computed {@code promptTokens - reusedTokens} where {@code selection} points. Nothing
   * when agent-aware scheduling is off.
   */
  public void contextDone(String session, Selection selection, int promptTokens, int reusedTokens) {
    if (!active()) {
      return;
    }
    long now = now();
    sessions.contextDone(session, now);
    if (retention != null && promptTokens > 0) {
      retention.served(session, selection.candidate().toString(), promptTokens, reusedTokens, now);
    }
  }

  /**
   * The session's turn ended, in a tool call or not (the answer's finish reason, or a trace's stop reason). Nothing
   * when agent-aware scheduling is off.
   */
  public void turnEnded(String session, boolean toolCall) {
    if (!active()) {
      return;
    }
    sessions.turnEnded(session, toolCall, now());
  }

  /** What is known of {@code session}: how likely its turns end in a tool call, and its tool pauses (or the pool's). */
  public AgentSessions.History history(String session) {
    return sessions.history(session, KvRetentionPolicy.MIN_OWN_PAUSES);
  }

  /** A session ended (its client said so, or it expired): forgotten. */
  public void forget(String session) {
    sessions.forget(session);
  }
}
