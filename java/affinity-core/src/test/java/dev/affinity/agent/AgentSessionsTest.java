package dev.affinity.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.affinity.agent.AgentSessions.Standing;
import org.junit.jupiter.api.Test;

/** What the frontend learns of each agent session. */
class AgentSessionsTest {
  private static final long S = 1_000_000_000L;

  @Test
  void aSessionIsNewThenInProgressUntilItIdlesOut() {
    AgentSessions s = new AgentSessions(100, 60);
    assertEquals(Standing.NEW, s.arrive("a", null, 0));
    assertEquals(Standing.CONTINUING, s.arrive("a", null, 30 * S));
    assertEquals(Standing.NEW, s.arrive("a", null, 200 * S), "idle for more than 60 s: a new session");
    assertEquals(Standing.SUBAGENT, s.arrive("a-sub", "a", 201 * S));
    assertEquals(Standing.SUBAGENT, s.arrive("a-sub", "a", 202 * S), "a sub-agent's parent waits for it");
    assertEquals(Standing.NEW, s.arrive(null, null, 0), "no session id");
  }

  @Test
  void pausesAreMeasuredFromTheContextAfterATurnThatEndedInAToolCall() {
    AgentSessions s = new AgentSessions(100, 3600);
    s.arrive("a", null, 0);
    s.contextDone("a", 2 * S);
    s.turnEnded("a", true, 5 * S);
    s.arrive("a", null, 12 * S);  // 10 s after its context was done
    s.contextDone("a", 13 * S);
    s.turnEnded("a", false, 14 * S);
    s.arrive("a", null, 100 * S);  // after a turn that did not call a tool: not a tool pause
    AgentSessions.History h = s.history("a", 1);
    assertArrayEquals(new double[] {10.0}, h.pausesSeconds(), 1e-9);
    // 1 tool turn of 2, the fleet's fraction (1/2) as a prior worth two turns: (1 + 1) / (2 + 2)
    assertEquals(0.5, h.toolCallProbability(), 1e-9);
  }

  @Test
  void aSessionWithFewPausesOfItsOwnBorrowsThePool() {
    AgentSessions s = new AgentSessions(100, 3600);
    for (String id : new String[] {"a", "b"}) {
      s.arrive(id, null, 0);
      s.contextDone(id, 0);
      s.turnEnded(id, true, 0);
      s.arrive(id, null, (id.equals("a") ? 4 : 8) * S);
    }
    assertArrayEquals(new double[] {4.0, 8.0}, s.history("c", 3).pausesSeconds(), 1e-9, "unknown session: the pool");
    assertArrayEquals(new double[] {4.0, 8.0}, s.history("a", 3).pausesSeconds(), 1e-9, "one of its own is too few");
    assertArrayEquals(new double[] {4.0}, s.history("a", 1).pausesSeconds(), 1e-9);
  }

  @Test
  void theLatestWordOnATurnsEndingCounts() {
    AgentSessions s = new AgentSessions(100, 3600);
    s.arrive("a", null, 0);
    s.contextDone("a", 0);
    s.turnEnded("a", false, S);  // the answer said "length"
    s.turnEnded("a", true, S);   // the trace says it called a tool
    s.arrive("a", null, 7 * S);
    AgentSessions.History h = s.history("a", 1);
    assertArrayEquals(new double[] {7.0}, h.pausesSeconds(), 1e-9);
    assertEquals((1 + 2 * 1.0) / (1 + 2), h.toolCallProbability(), 1e-9, "one turn, a tool call, counted once");
  }

  @Test
  void theLeastRecentlyActiveSessionIsForgottenBeyondTheBound() {
    AgentSessions s = new AgentSessions(2, 3600);
    s.arrive("a", null, 0);
    s.arrive("b", null, 1);
    s.arrive("c", null, 2);
    assertEquals(2, s.size());
    assertEquals(Standing.NEW, s.arrive("a", null, 3), "forgotten");
    assertEquals(Standing.CONTINUING, s.arrive("c", null, 4));
  }
}
