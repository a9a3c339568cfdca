package dev.affinity.bench.sim;

import dev.affinity.bench.drive.Workload;
import dev.affinity.bench.metrics.Slo;
import dev.affinity.bench.workload.AgenticParams;
import dev.affinity.bench.workload.AgenticWorkload;
import dev.affinity.config.ConfigLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class SimScratchTest {
  @Test
  void scratch() throws Exception {
    String yaml = Files.readString(Path.of("src/main/resources/bench/fleet.yaml"));
    var cfg = ConfigLoader.parse(yaml, "fleet.yaml").config();
    var params = AgenticParams.defaults();
    var agents = AgenticWorkload.generate(params, 1);
    var w = new Workload.Agents("agentic", agents, params.blockSize());
    System.out.println("requests " + w.requests());
    var res = new Simulation(cfg, Slo.defaults(), Duration.ofSeconds(1), false).run("p", w, 1, n -> { });
    var m = res.metrics();
    System.out.printf("wall %.2f s sim %.1f s; ttft %s itl %s e2e %s hit %.3f ideal %.3f genq %s imb %.2f %.2f agents %d/%d errors %d%n",
        res.wallSeconds(), res.simulatedSeconds(), Arrays.toString(m.ttftMs()), Arrays.toString(m.itlMs()), Arrays.toString(m.e2eMs()),
        m.hitRatio(), m.idealHitRatio(), Arrays.toString(m.genQueueMs()), m.ctxImbalance(), m.genImbalance(), m.agentsWithinSlo(), m.agents(), m.errors());
  }
}
