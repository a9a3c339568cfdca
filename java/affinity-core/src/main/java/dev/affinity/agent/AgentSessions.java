package dev.affinity.agent;

import java.util.Arrays;
import java.util.LinkedHashMap;

/**
 * What the frontend knows of each agent session (a conversation id): whether it is new or already in progress, how
 * its turns ended (in a tool call or not), and how long its tool pauses last: the time from a turn's context leg
 * finishing (its KV released for reuse) to the session's next call, after turns that ended in a tool call. The
 * sessions' pooled pauses are the prior of a session with few of its own. Bounded: beyond {@code maxSessions} the
 * least recently active is forgotten, and a session idle for {@code idleNanos} starts anew. Thread-safe.
 */
public final class AgentSessions {
  /** Pauses kept per session, and in the pool of all sessions. */
  static final int SESSION_SAMPLES = 32;
  static final int POOL_SAMPLES = 1024;

  /** Where a call stands in its program. */
  public enum Standing {
    /** The first call of a session (or a call without a session id). */
    NEW,
    /** A later call of a session in progress. */
    CONTINUING,
    /** A sub-agent's call: its parent waits for it. */
    SUBAGENT
  }

  /** A session's history for a retention decision: the probability its turn ends in a tool call, and its pauses. */
  public record History(double toolCallProbability, double[] pausesSeconds) {}

  private static final class Session {
    long lastActiveNanos;
    long contextDoneNanos = -1;
    boolean lastTurnToolCall;
    int toolTurns;
    int endedTurns;
    /** Calls that arrived, and the call whose ending was last told (-1: none). */
    int calls;
    int endedCall = -1;
    final double[] pauses = new double[SESSION_SAMPLES];
    int pauseCount;
  }

  private final int maxSessions;
  private final long idleNanos;
  private final LinkedHashMap<String, Session> sessions = new LinkedHashMap<>(16, 0.75f, true);
  private final double[] pool = new double[POOL_SAMPLES];
  private int poolCount;
  private long fleetToolTurns;
  private long fleetEndedTurns;

  public AgentSessions(int maxSessions, double idleSeconds) {
    if (maxSessions < 1 || !(idleSeconds > 0)) {
      throw new IllegalArgumentException("maxSessions and idleSeconds must be positive, got " + maxSessions + ", "
          + idleSeconds);
    }
    this.maxSessions = maxSessions;
    this.idleNanos = (long) Math.min(Long.MAX_VALUE / 2.0, idleSeconds * 1e9);
  }

  /**
   * A call of {@code session} (null: none) arrived; {@code parent} is its parent session's id for a sub-agent. A
   * session's next call after a turn that ended in a tool call records the pause since that turn's context finished.
   */
  public synchronized Standing arrive(String session, String parent, long now) {
    if (session == null) {
      return parent != null ? Standing.SUBAGENT : Standing.NEW;
    }
    Session s = sessions.get(session);
    boolean known = s != null && now - s.lastActiveNanos < idleNanos;
    if (s == null || !known) {
      s = new Session();
      sessions.put(session, s);
      if (sessions.size() > maxSessions) {
        var it = sessions.entrySet().iterator();
        it.next();
        it.remove();
      }
    } else if (s.lastTurnToolCall && s.contextDoneNanos >= 0) {
      double pause = Math.max(0, now - s.contextDoneNanos) / 1e9;
      s.pauses[s.pauseCount++ % SESSION_SAMPLES] = pause;
      pool[poolCount++ % POOL_SAMPLES] = pause;
      s.lastTurnToolCall = false;
    }
    s.lastActiveNanos = now;
    s.calls++;
    if (parent != null) {
      return Standing.SUBAGENT;
    }
    return known ? Standing.CONTINUING : Standing.NEW;
  }

  /** The call's context leg finished (its blocks are released for reuse from now). */
  public synchronized void contextDone(String session, long now) {
    Session s = session == null ? null : sessions.get(session);
    if (s != null) {
      s.contextDoneNanos = now;
      s.lastActiveNanos = now;
    }
  }

  /**
   * The session's latest call's turn ended: in a tool call (OpenAI {@code tool_calls}, Anthropic {@code tool_use}) or
   * not. Told again for the same call (a simulator that knows the recorded stop reason), the latest word counts.
   */
  public synchronized void turnEnded(String session, boolean toolCall, long now) {
    Session s = session == null ? null : sessions.get(session);
    if (s == null) {
      return;
    }
    if (s.endedCall == s.calls) {  // told again: undo the first word
      if (s.lastTurnToolCall) {
        s.toolTurns--;
        fleetToolTurns--;
      }
      s.endedTurns--;
      fleetEndedTurns--;
    }
    s.endedCall = s.calls;
    s.lastTurnToolCall = toolCall;
    s.endedTurns++;
    fleetEndedTurns++;
    if (toolCall) {
      s.toolTurns++;
      fleetToolTurns++;
    }
    s.lastActiveNanos = now;
  }

  /**
   * The session's history: the probability its next turn ends in a tool call (its own turns, with the fleet's
   * fraction as a prior worth two turns), and its measured tool pauses, or the pool's while it has fewer than
   * {@code minOwn}; null for a session without one.
   */
  public synchronized History history(String session, int minOwn) {
    Session s = session == null ? null : sessions.get(session);
    double prior = fleetEndedTurns == 0 ? 0.5 : (double) fleetToolTurns / fleetEndedTurns;
    int own = s == null ? 0 : Math.min(s.pauseCount, SESSION_SAMPLES);
    double[] pauses = own >= minOwn ? Arrays.copyOf(s.pauses, own)
        : Arrays.copyOf(pool, Math.min(poolCount, POOL_SAMPLES));
    if (s == null) {
      return new History(prior, pauses);
    }
    return new History((s.toolTurns + 2 * prior) / (s.endedTurns + 2), pauses);
  }

  /** Sessions tracked now. */
  public synchronized int size() {
    return sessions.size();
  }

  /** A session's id is forgotten: it ended (its client said so, or it expired). */
  public synchronized void forget(String session) {
    sessions.remove(session);
  }
}
