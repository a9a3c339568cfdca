package dev.affinity.bench.live;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.bench.drive.Workload;
import dev.affinity.bench.metrics.RequestRecord;
import dev.affinity.bench.metrics.RunResult;
import dev.affinity.bench.metrics.Slo;
import dev.affinity.bench.workload.AgenticParams;
import dev.affinity.bench.workload.AgenticWorkload;
import dev.affinity.config.DisaggConfig;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.http.FrontendOptions;
import java.io.IOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The live driver against a real frontend over HTTP (embedded workers with a zero-cost timing model). */
class LiveRunTest {
  @Test
  void playsAnAgenticWorkloadOverHttpWithTheAgentsHeaders() throws Exception {
    DisaggConfig config = LiveFixtures.zeroCostFleet();
    AgenticParams p = new AgenticParams(3, 20.0, 2, 2_000, 200, 3, 4, 200, 400, 8, 16, 20, 50, 16_000, 0.6, 2, 2, 2,
        AgenticParams.SubAgentStyle.FRESH, 2, 1_000, 100, 64);
    Workload.Agents workload = new Workload.Agents("tiny-agentic", AgenticWorkload.generate(p, 2), p.blockSize());
    try (AffinityServer server = AffinityServer.start(config, FrontendOptions.fromConfig(config, "test").withPort(0))) {
      LiveRun live = new LiveRun("http://127.0.0.1:" + server.port(), "affinity-sim", "x-claude-code-session-id",
          "X-Dynamo-Parent-Session-ID", Slo.defaults(), Duration.ofSeconds(30));
      RunResult r = live.run("live", workload, 2, Duration.ofSeconds(120), n -> { });
      assertEquals(workload.requests(), r.records().size());
      assertEquals(0, r.metrics().errors(), () -> r.records().stream().filter(x -> !x.ok()).toList().toString());
      Map<String, String> parentCtx = new HashMap<>();
      int subAgentCalls = 0;
      for (RequestRecord rec : r.records()) {
        assertTrue(rec.ttftUs() >= 0 && rec.e2eUs() >= rec.ttftUs(), rec.toString());
        assertEquals(rec.outputTokens() > 0, true, rec.toString());
        assertNotNull(rec.ctxWorker(), "route header read");
        assertTrue(rec.reusedTokens() >= 0, "reuse reported");
        if (rec.parentSessionId() == null) {
          parentCtx.put(rec.sessionId(), rec.ctxWorker());
        } else {
          subAgentCalls++;
          assertEquals(parentCtx.get(rec.parentSessionId()), rec.ctxWorker(), "sub-agent on its parent's context instance");
        }
      }
      assertTrue(subAgentCalls > 0, "the workload has sub-agents");
      assertTrue(r.metrics().hitRatio() > 0, "prefixes were reused");
    }
  }

  @Test
  void aMissingFrontendIsAClearError() {
    LiveRun live = new LiveRun("http://127.0.0.1:1", "m", "x-session-id", "x-parent", Slo.defaults(), Duration.ofSeconds(1));
    Workload.Trace empty = new Workload.Trace("empty", java.util.List.of());
    assertThrows(IOException.class, () -> live.run("live", empty, 1, Duration.ofSeconds(5), n -> { }));
  }
}
