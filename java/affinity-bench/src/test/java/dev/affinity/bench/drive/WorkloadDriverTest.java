package dev.affinity.bench.drive;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.bench.metrics.RequestRecord;
import dev.affinity.bench.sim.VirtualScheduler;
import dev.affinity.bench.trace.TraceRequest;
import dev.affinity.bench.workload.AgentCall;
import dev.affinity.bench.workload.AgentScript;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Closed- and open-loop timing rules, with a transport that answers after a fixed virtual delay. */
class WorkloadDriverTest {
  private static final long SERVICE_US = 100_000;  // every request takes 100 ms

  private final VirtualScheduler clock = new VirtualScheduler();
  private final List<String> log = new ArrayList<>();

  private final RequestTransport transport = (out, done) -> {
    long sent = clock.nowMicros();
    TraceRequest r = out.request();
    log.add(sent / 1000 + "ms send " + r.sessionId() + " " + r.inputLength());
    clock.schedule(() -> done.accept(new RequestRecord(out.index(), r.sessionId(), r.parentSessionId(), out.agentId(), sent,
        10, SERVICE_US, r.outputLength(), r.inputLength(), 0, out.idealReusedTokens(), out.pooledReusedTokens(), "ctx-0", 0, "gen-0", 0, 200, null)),
        Duration.ofNanos(SERVICE_US * 1000));
  };

  private static AgentCall call(double thinkMs, int input, List<AgentScript> spawns) {
    return new AgentCall(thinkMs, input, 4, List.of(1L), spawns);
  }

  @Test
  void closedLoopWaitsForResponsesThinkTimesAndEverySubAgent() {
    AgentScript fast = new AgentScript("sub-fast", "main", 0, List.of(call(0, 11, List.of())));
    AgentScript slow = new AgentScript("sub-slow", "main", 0, List.of(call(0, 21, List.of()), call(500, 22, List.of())));
    AgentScript main = new AgentScript("main", null, 1000, List.of(call(0, 1, List.of(fast, slow)), call(50, 2, List.of())));
    WorkloadDriver driver = new WorkloadDriver(transport, clock, new IdealCache(1), r -> { });
    driver.startClosedLoop(List.of(main), 64);
    while (clock.runNext()) {
      // run to the end
    }
    assertEquals(List.of(
        "1000ms send main 1",          // starts at startMs
        "1100ms send sub-fast 11",     // both sub-agents once the spawning call's response is in
        "1100ms send sub-slow 21",
        "1700ms send sub-slow 22",     // 100 ms answer + 500 ms think
        "1850ms send main 2"),         // after the slowest sub-agent (1800) + 50 ms think
        log);
    assertTrue(driver.finished());
    assertEquals(5, driver.planned());
    List<RequestRecord> records = driver.records();
    assertEquals(5, records.size());
    assertTrue(records.stream().allMatch(r -> r.agentId().equals("main")), "sub-agents count towards their main agent");
  }

  @Test
  void openLoopSendsAtArrivalTimesRegardlessOfAnswers() {
    List<TraceRequest> trace = List.of(new TraceRequest(0, null, null, 1, 4, 64, List.of(1L)),
        new TraceRequest(30, null, null, 2, 4, 64, List.of(2L)), new TraceRequest(30, "s", null, 3, 4, 64, List.of(3L)));
    WorkloadDriver driver = new WorkloadDriver(transport, clock, new IdealCache(1), r -> { });
    driver.startOpenLoop(trace);
    while (clock.runNext()) {
      // run to the end
    }
    assertEquals(List.of("0ms send null 1", "30ms send null 2", "30ms send s 3"), log);
    List<RequestRecord> records = driver.records();
    assertEquals(List.of("#0", "#1", "s"), records.stream().map(RequestRecord::agentId).toList(),
        "a request without a session is an agent of its own");
  }
}
