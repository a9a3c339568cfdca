package dev.affinity.bench.workload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.bench.drive.IdealCache;
import dev.affinity.bench.drive.RequestTransport;
import dev.affinity.bench.drive.WorkloadDriver;
import dev.affinity.bench.metrics.RequestRecord;
import dev.affinity.bench.sim.VirtualScheduler;
import dev.affinity.bench.trace.ClaudeCodeTrace;
import dev.affinity.bench.trace.ClaudeCodeTrace.Call;
import dev.affinity.bench.trace.ClaudeCodeTraceReader;
import dev.affinity.bench.trace.ClaudeCodeTraceReaderTest;
import dev.affinity.bench.trace.TraceRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Claude Code traces as users: sessions, sub-agents, id namespaces, shared prompts, think times, loops. */
class ClaudeCodeWorkloadTest {
  private static final ClaudeCodeTrace TRACE = ClaudeCodeTraceReader.parse(ClaudeCodeTraceReaderTest.WITH_SUBAGENTS, "s1.json");
  private static final long SERVICE_US = 100_000;

  private static ClaudeCodeWorkload.Options options(int users, double capS, boolean shared) {
    return new ClaudeCodeWorkload.Options(users, 0.1, capS, shared, false);
  }

  /** Plays the users closed-loop; every request takes 100 ms; returns "ms session input" per send. */
  private static List<String> play(List<AgentScript> agents) {
    VirtualScheduler clock = new VirtualScheduler();
    List<String> log = new ArrayList<>();
    RequestTransport transport = (out, done) -> {
      long sent = clock.nowMicros();
      TraceRequest r = out.request();
      log.add(sent / 1000 + " " + r.sessionId() + " " + r.parentSessionId() + " " + r.inputLength());
      clock.schedule(() -> done.accept(new RequestRecord(out.index(), r.sessionId(), r.parentSessionId(), out.agentId(), sent,
          10, SERVICE_US, r.outputLength(), r.inputLength(), 0, 0, -1, "c", 0, "g", 0, 200, null)),
          Duration.ofNanos(SERVICE_US * 1000));
    };
    WorkloadDriver driver = new WorkloadDriver(transport, clock, new IdealCache(64), r -> { });
    driver.startClosedLoop(agents, 64, true);
    while (clock.runNext()) {
      // to the end
    }
    assertTrue(driver.finished());
    return log;
  }

  @Test
  void subAgentsRunTogetherAndTheParentGoesOnAfterThemAndItsThinkTime() {
    List<AgentScript> agents = ClaudeCodeWorkload.agents(List.of(TRACE), options(1, 60, false), 1);
    assertEquals(List.of(
        "0 user-0 null 200",
        "100 user-0-sub-0-agent_001 user-0 130",    // spawned together once the call's response is in
        "100 user-0-sub-1-agent_002 user-0 70",
        "1700 user-0-sub-0-agent_001 user-0 140",   // 100 ms answer + 1.5 s think
        "60100 user-0 null 260"),                   // think 299 s capped at 60 s, from the response
        play(agents));
    // with a 1 s cap (the sub-agent's 1.5 s think too) the sub-agents, done at 1.3 s, hold the parent back
    List<String> capped = play(ClaudeCodeWorkload.agents(List.of(TRACE), options(1, 1, false), 1));
    assertEquals("1200 user-0-sub-0-agent_001 user-0 140", capped.get(3));
    assertEquals("1300 user-0 null 260", capped.get(4));
  }

  @Test
  void idsAreNamespacedPerUserSharedWithSubAgentsAndCompleteToTheLastBlock() {
    List<AgentScript> agents = ClaudeCodeWorkload.agents(List.of(TRACE), options(2, 60, false), 1);
    AgentScript u0 = agents.get(0);
    AgentScript u1 = agents.get(1);
    assertEquals("user-1", u1.sessionId());
    List<Long> first = u0.calls().get(0).hashIds();
    assertEquals(4, first.size(), "ceil(200 / 64): the partial last block gets an id too");
    assertEquals(first.subList(0, 3), u0.calls().get(1).hashIds().subList(0, 3), "equal trace ids, equal ids");
    assertNotEquals(first.get(3), u0.calls().get(1).hashIds().get(3), "the partial block's id is its own");
    Set<Long> user0 = new HashSet<>();
    Set<Long> user1 = new HashSet<>();
    collect(u0, user0);
    collect(u1, user1);
    assertTrue(Collections.disjoint(user0, user1), "copies of a trace share nothing");
    AgentScript sub = u0.calls().get(0).spawns().get(0);
    assertEquals(sub.calls().get(0).hashIds().subList(0, 2), sub.calls().get(1).hashIds().subList(0, 2));
    assertEquals(1, sub.calls().get(1).outputLength(), "a recorded 0-token output sends 1");
  }

  private static void collect(AgentScript a, Set<Long> ids) {
    for (AgentCall c : a.calls()) {
      ids.addAll(c.hashIds());
      c.spawns().forEach(s -> collect(s, ids));
    }
  }

  @Test
  void aSharedSystemPromptIsOptionalAndPerAgentKind() {
    List<AgentScript> plain = ClaudeCodeWorkload.agents(List.of(TRACE), options(2, 60, false), 1);
    assertNotEquals(plain.get(0).calls().get(0).hashIds().get(0), plain.get(1).calls().get(0).hashIds().get(0));
    List<AgentScript> shared = ClaudeCodeWorkload.agents(List.of(TRACE), options(2, 60, true), 1);
    List<Long> a = shared.get(0).calls().get(0).hashIds();
    List<Long> b = shared.get(1).calls().get(0).hashIds();
    assertEquals(a.subList(0, 2), b.subList(0, 2), "floor((28 + 100) / 64) = 2 blocks the same for every session");
    assertNotEquals(a.get(2), b.get(2));
    List<AgentScript> subs = shared.get(0).calls().get(0).spawns();
    assertEquals(subs.get(0).calls().get(0).hashIds().get(0), subs.get(1).calls().get(0).hashIds().get(0),
        "siblings of one sub-agent type share its 64-token prompt");
    assertNotEquals(a.get(0), subs.get(0).calls().get(0).hashIds().get(0), "another kind, another prompt");
  }

  @Test
  void missingThinkTimesComeFromTheTimestampsLessTheApiTime() {
    Call a = new Call(10, 100, 5, new long[0], 2.5, 0);
    Call gapOnly = new Call(20, 100, 5, new long[0], Double.NaN, Double.NaN);
    Call afterApi = new Call(30, 100, 5, new long[0], 1, Double.NaN);
    assertEquals(7.5, ClaudeCodeWorkload.thinkSeconds(List.of(a, gapOnly), 1), 1e-9, "20 - 10 - 2.5");
    assertEquals(10, ClaudeCodeWorkload.thinkSeconds(List.of(gapOnly, afterApi), 1), 1e-9, "no api_time: the whole gap");
    assertEquals(20, ClaudeCodeWorkload.thinkSeconds(List.of(gapOnly), 0), 1e-9, "a first call: its t");
  }

  @Test
  void usersCycleOverTheTracesAndStartAsAPoissonProcess() throws Exception {
    List<ClaudeCodeTrace> traces = ClaudeCodeTraceReader.readDirectory(
        java.nio.file.Path.of(getClass().getResource("/traces/claude-code/trace_0026.json").toURI()).getParent());
    ClaudeCodeWorkload.Options defaults = ClaudeCodeWorkload.Options.defaults();
    assertEquals(3, ClaudeCodeWorkload.agents(traces, defaults, 1).size(), "one user per trace by default");
    assertEquals("claude-code-3", ClaudeCodeWorkload.name(defaults, 3));
    List<AgentScript> five = ClaudeCodeWorkload.agents(traces, defaults.withUsers(5), 1);
    assertEquals(List.of(3, 8, 4, 3, 8), five.stream().map(a -> a.calls().size()).toList(), "user u replays trace u mod 3");
    assertEquals(0, five.get(0).startMs());
    for (int u = 1; u < 5; u++) {
      assertTrue(five.get(u).startMs() > five.get(u - 1).startMs());
    }
    assertEquals(five.get(4).startMs(), ClaudeCodeWorkload.agents(traces, defaults.withUsers(5), 1).get(4).startMs());
    assertNotEquals(five.get(4).startMs(), ClaudeCodeWorkload.agents(traces, defaults.withUsers(5), 2).get(4).startMs());
    assertNull(five.get(0).parentSessionId());
  }

  @Test
  void openLoopSendsAtRecordedTimesLessTheThinkTimeTheCapRemoved() {
    ClaudeCodeWorkload.Options open = new ClaudeCodeWorkload.Options(1, 0.1, 60, false, true);
    List<TraceRequest> trace = ClaudeCodeWorkload.openLoop(List.of(TRACE), open, 1);
    assertEquals(List.of(0.0, 5000.0, 6000.0, 7000.0, 61000.0), trace.stream().map(TraceRequest::arrivalMs).toList());
    assertEquals("user-0-sub-0-agent_001", trace.get(1).sessionId());
    assertEquals("user-0", trace.get(1).parentSessionId());
    assertEquals("claude-code-open-1", ClaudeCodeWorkload.name(open, 1));
  }

  @Test
  void badOptionsAreRejected() {
    assertThrows(IllegalArgumentException.class, () -> new ClaudeCodeWorkload.Options(-1, 0.1, 60, false, false));
    assertThrows(IllegalArgumentException.class, () -> new ClaudeCodeWorkload.Options(1, 0, 60, false, false));
    assertThrows(IllegalArgumentException.class, () -> new ClaudeCodeWorkload.Options(1, 0.1, -1, false, false));
  }
}
