package dev.affinity.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.affinity.agent.AgentSessions.Standing;
import org.junit.jupiter.api.Test;

/** Program-level priority and its age promotion. */
class AgentPriorityTest {
  private static final long S = 1_000_000_000L;

  @Test
  void callsInProgressAndSubAgentsGoAheadOfNewSessions() {
    AgentPriority p = new AgentPriority(10);
    assertEquals(AgentPriority.DEFAULT, p.send(Standing.NEW, "ctx:a#0", 0).priority());
    assertEquals(AgentPriority.RAISED, p.send(Standing.CONTINUING, "ctx:a#0", 0).priority());
    assertEquals(AgentPriority.RAISED, p.send(Standing.SUBAGENT, "ctx:a#0", 0).priority());
  }

  @Test
  void aDefaultLegThatWaitedThePromotionAgeIsOvertakenByNoLaterLeg() {
    AgentPriority p = new AgentPriority(10);
    AgentPriority.Leg waiting = p.send(Standing.NEW, "ctx:a#0", 0);
    // within the promotion age raised legs go ahead of it
    assertEquals(AgentPriority.RAISED, p.send(Standing.CONTINUING, "ctx:a#0", 9 * S).priority());
    // from then on, later legs there go at the default priority: behind it, first come first served
    AgentPriority.Leg behind = p.send(Standing.CONTINUING, "ctx:a#0", 10 * S);
    assertEquals(AgentPriority.DEFAULT, behind.priority());
    AgentPriority.Leg behindToo = p.send(Standing.SUBAGENT, "ctx:a#0", 60 * S);
    assertEquals(AgentPriority.DEFAULT, behindToo.priority());
    // another place is not held back by it
    assertEquals(AgentPriority.RAISED, p.send(Standing.CONTINUING, "ctx:b#0", 60 * S).priority());
    assertEquals(AgentPriority.RAISED, p.send(Standing.CONTINUING, "gen:a#0", 60 * S).priority());
    // once it is answered, the legs sent at the default priority behind it wait there in turn
    p.ended(waiting);
    assertEquals(AgentPriority.DEFAULT, p.send(Standing.CONTINUING, "ctx:a#0", 61 * S).priority());
    p.ended(behind);
    p.ended(behindToo);
    assertEquals(AgentPriority.RAISED, p.send(Standing.CONTINUING, "ctx:a#0", 62 * S).priority());
  }

  @Test
  void theOldestWaitingDefaultLegCounts() {
    AgentPriority p = new AgentPriority(10);
    AgentPriority.Leg first = p.send(Standing.NEW, "ctx:a#0", 0);
    p.send(Standing.NEW, "ctx:a#0", 5 * S);
    p.ended(first);  // answered: the one sent at 5 s is the oldest now
    assertEquals(AgentPriority.RAISED, p.send(Standing.CONTINUING, "ctx:a#0", 14 * S).priority());
    assertEquals(AgentPriority.DEFAULT, p.send(Standing.CONTINUING, "ctx:a#0", 15 * S).priority());
  }

  @Test
  void endingARaisedLegOrTwiceIsHarmless() {
    AgentPriority p = new AgentPriority(1);
    AgentPriority.Leg raised = p.send(Standing.CONTINUING, "ctx:a#0", 0);
    AgentPriority.Leg normal = p.send(Standing.NEW, "ctx:a#0", 0);
    p.ended(raised);
    p.ended(normal);
    p.ended(normal);
    assertEquals(AgentPriority.RAISED, p.send(Standing.CONTINUING, "ctx:a#0", 100 * S).priority());
  }

  @Test
  void thePromotionAgeMustBePositive() {
    assertThrows(IllegalArgumentException.class, () -> new AgentPriority(0));
  }
}
