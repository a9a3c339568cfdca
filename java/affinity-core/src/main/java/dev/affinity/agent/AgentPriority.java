package dev.affinity.agent;

import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Program-level ordering of agent calls through the executor's request priority (TensorRT-LLM's
 * {@code waiting_queue_policy: priority}: the higher priority first, first come first served among equals): calls of
 * a session already in progress and sub-agents their parent waits on ({@link AgentSessions.Standing#CONTINUING},
 * {@link AgentSessions.Standing#SUBAGENT}) go ahead of the first calls of new sessions.
 *
 * <p>No call starves: a leg is sent at the raised priority only while no leg of the default priority has waited on
 * the same (worker, rank) for {@code promotionNanos} or more; once one has, later legs there go at the default
 * priority too, behind it (first come first served). A default-priority leg is therefore overtaken only by the
 * raised legs sent within {@code promotionNanos} of its own sending: its wait is bounded by that and their work.
 * The frontend counts a leg as waiting from its sending until its worker answers. Thread-safe.
 */
public final class AgentPriority {
  /** TensorRT-LLM's default request priority ({@code tensorrt_llm/executor/request.py} DEFAULT_REQUEST_PRIORITY). */
  public static final double DEFAULT = 0.5;
  /** The priority of calls of sessions in progress and of sub-agents. */
  public static final double RAISED = 0.75;

  private final long promotionNanos;
  /** Per (fleet, worker, rank): the default-priority legs outstanding there, oldest first (send time by leg). */
  private final Map<String, LinkedHashMap<Long, Long>> waiting = new HashMap<>();
  private long nextLeg;

  public AgentPriority(double promotionSeconds) {
    if (!(promotionSeconds > 0)) {
      throw new IllegalArgumentException("the promotion age must be > 0 seconds, got " + promotionSeconds);
    }
    this.promotionNanos = (long) Math.min(Long.MAX_VALUE / 2.0, promotionSeconds * 1e9);
  }

  /** A leg sent at a priority, to be ended with {@link #ended} when its worker answers (or it fails). */
  public record Leg(String place, long id, double priority) {}

  /**
   * The priority of a leg of a call of this standing sent to {@code place} (fleet, worker and rank) now, and its
   * record: the raised one for calls in progress and sub-agents unless a default-priority leg has waited there for
   * the promotion age.
   */
  public synchronized Leg send(AgentSessions.Standing standing, String place, long now) {
    boolean raised = standing != AgentSessions.Standing.NEW && !starving(place, now);
    long id = nextLeg++;
    if (!raised) {
      waiting.computeIfAbsent(place, k -> new LinkedHashMap<>()).put(id, now);
    }
    return new Leg(place, id, raised ? RAISED : DEFAULT);
  }

  /** The leg's worker answered it, or it ended otherwise. */
  public synchronized void ended(Leg leg) {
    if (leg.priority() != DEFAULT) {
      return;
    }
    LinkedHashMap<Long, Long> legs = waiting.get(leg.place());
    if (legs != null && legs.remove(leg.id()) != null && legs.isEmpty()) {
      waiting.remove(leg.place());
    }
  }

  /** Whether a default-priority leg has waited at {@code place} for the promotion age or more. */
  private boolean starving(String place, long now) {
    LinkedHashMap<Long, Long> legs = waiting.get(place);
    if (legs == null) {
      return false;
    }
    Iterator<Long> oldest = legs.values().iterator();
    return oldest.hasNext() && now - oldest.next() >= promotionNanos;
  }
}
