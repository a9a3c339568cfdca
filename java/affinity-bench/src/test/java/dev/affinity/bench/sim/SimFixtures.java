package dev.affinity.bench.sim;

import dev.affinity.bench.compare.FleetConfigs;
import dev.affinity.bench.drive.Workload;
import dev.affinity.bench.workload.AgenticParams;
import dev.affinity.bench.workload.AgenticWorkload;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Path;

/** A small fleet and a small agentic workload that simulate in well under a second. */
public final class SimFixtures {
  private SimFixtures() {}

  public static Path smallFleetFile() {
    try {
      return Path.of(SimFixtures.class.getResource("/bench/small-fleet.yaml").toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  public static FleetConfigs smallFleet() throws IOException {
    return FleetConfigs.load(smallFleetFile());
  }

  /**
   * 6 agents of 2 types (4k-token framework prompt each), 4-8 turns, half of the main calls fan out
   * to 1-3 FRESH sub-agents; think times of 0.2-1 s so that agents overlap.
   */
  public static AgenticParams smallAgentic(int agents, AgenticParams.SubAgentStyle style) {
    return new AgenticParams(agents, 2.0, 2, 4_000, 300, 4, 8, 300, 900, 20, 60, 200, 1_000, 24_000, 0.5, 3, 2, 3, style, 2,
        2_000, 200, 64);
  }

  public static Workload.Agents smallWorkload(long seed) {
    AgenticParams p = smallAgentic(6, AgenticParams.SubAgentStyle.FRESH);
    return new Workload.Agents("small-agentic", AgenticWorkload.generate(p, seed), p.blockSize());
  }
}
