package dev.affinity.bench.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.bench.compare.FleetConfigs;
import dev.affinity.bench.compare.Policy;
import dev.affinity.bench.drive.Workload;
import dev.affinity.bench.metrics.RequestRecord;
import dev.affinity.bench.metrics.RunResult;
import dev.affinity.bench.metrics.Slo;
import dev.affinity.bench.trace.TraceRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Agent priority through the real CPU executor's priority queue, and its age promotion: on an overloaded rank whose
 * sessions in progress keep sending, a new session's first call would wait for all of them; with promotion it is
 * overtaken only by the calls sent within the promotion age after it.
 */
class AgentPriorityStarvationTest {
  /** One context rank with one batch slot and TensorRT-LLM's priority waiting queue; decode never the bottleneck. */
  private static final String FLEET = """
      hostname: 127.0.0.1
      port: 8000
      context_servers:
        num_instances: 1
        router: {type: affinity}
      generation_servers:
        num_instances: 1
        router: {type: affinity}
      affinity:
        request_timeout_seconds: 3600
        selection_ttl_seconds: 3600
        workers:
          context:
            instances: 1
            ranks: 1
            kv_blocks_per_rank: 65536
            max_batch_size: 1
            executor:
              scheduler_config: {waiting_queue_policy: priority}
          generation:
            instances: 1
            ranks: 1
            kv_blocks_per_rank: 65536
      """;

  @TempDir
  Path dir;

  private static List<Long> blocks(long base, int n) {
    List<Long> ids = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      ids.add(base + i);
    }
    return ids;
  }

  /**
   * Five sessions send a 2,048-token call every 100 ms for 10 s (about 50 a second against the rank's ~12: an
   * overload); a new session's first call arrives at 1 s. Returns its TTFT and the last in-progress call's send time.
   */
  private long[] newcomer(double promotionSeconds) throws Exception {
    Path fleet = dir.resolve("fleet.yaml");
    Files.writeString(fleet, FLEET);
    List<TraceRequest> trace = new ArrayList<>();
    long block = 0;
    for (int t = 0; t < 100; t++) {
      for (int s = 0; s < 5; s++) {
        trace.add(new TraceRequest(t * 100.0, "busy-" + s, null, 2048, 4, 32, blocks(block, 64)));
        block += 64;
      }
    }
    trace.add(new TraceRequest(1000.5, "newcomer", null, 2048, 4, 32, blocks(block, 64)));
    trace.sort(java.util.Comparator.comparingDouble(TraceRequest::arrivalMs));
    Policy p = Policy.named("affinity{agent_priority=true; agent_priority_promotion_seconds=" + promotionSeconds + "}");
    RunResult r = new Simulation(FleetConfigs.load(fleet).under(p), Slo.defaults(), Duration.ofSeconds(10), false)
        .run(p.name(), new Workload.Trace("starve", trace), 1, n -> { });
    assertEquals(0, r.metrics().errors());
    RequestRecord mine = r.records().stream().filter(x -> "newcomer".equals(x.sessionId())).findFirst().orElseThrow();
    long lastBusyAnswer = r.records().stream().filter(x -> !"newcomer".equals(x.sessionId()))
        .mapToLong(x -> x.sendUs() + x.ttftUs()).max().orElseThrow();
    return new long[] {mine.ttftUs(), lastBusyAnswer - mine.sendUs()};
  }

  @Test
  void aNewSessionIsOvertakenOnlyWithinThePromotionAge() throws Exception {
    long[] starved = newcomer(1e6);
    long[] promoted = newcomer(2);
    // without promotion every call in progress goes first: the newcomer's first token comes after the last of them
    assertTrue(starved[0] >= starved[1], "starved: " + starved[0] + " us, the busy sessions done after " + starved[1]);
    // with a 2 s promotion age it is answered long before the backlog of calls in progress is
    assertTrue(promoted[0] < promoted[1] / 2, "promoted: " + promoted[0] + " us, backlog " + promoted[1] + " us");
    // bounded by the ~10 calls queued ahead of it plus what 50 calls a second send within the 2 s after it, at
    // about 12 a second: ~10 s with margin, where the starved one waited for the whole 10 s stream's backlog
    assertTrue(promoted[0] < 12_000_000, "promoted: " + promoted[0] + " us");
  }
}
