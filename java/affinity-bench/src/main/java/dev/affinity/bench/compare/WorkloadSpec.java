package dev.affinity.bench.compare;

import dev.affinity.bench.drive.Workload;
import dev.affinity.bench.trace.AffinityTrace;
import dev.affinity.bench.trace.MooncakeTraceReader;
import dev.affinity.bench.trace.TraceRequest;
import dev.affinity.bench.workload.AgenticParams;
import dev.affinity.bench.workload.AgenticWorkload;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * A workload named on the command line: {@code agentic} (the agentic generator's defaults, FRESH
 * sub-agents), {@code agentic-fork} (FORK sub-agents), {@code mooncake:PATH} (a Mooncake trace file)
 * or {@code trace:PATH} (Affinity's JSONL trace format).
 *
 * @param agents agents of an agentic workload ({@code <= 0}: the generator's default)
 * @param limit  requests of a trace to replay, from its start ({@code <= 0}: all)
 */
public record WorkloadSpec(String spec, int agents, int limit) {

  /** Checks the name and, for a trace, that its file exists, without reading it. */
  public void validate() {
    if (spec.equals("agentic") || spec.equals("agentic-fork")) {
      return;
    }
    int colon = spec.indexOf(':');
    if (colon <= 0 || !(spec.startsWith("mooncake:") || spec.startsWith("trace:"))) {
      throw unknown();
    }
    Path path = Path.of(spec.substring(colon + 1));
    if (!Files.isRegularFile(path)) {
      throw new IllegalArgumentException("workload " + spec + ": no such file " + path);
    }
  }

  /** The workload for {@code seed} (agentic workloads are generated from it; traces are fixed). */
  public Workload create(long seed) throws IOException {
    validate();
    if (spec.equals("agentic") || spec.equals("agentic-fork")) {
      AgenticParams p = AgenticParams.defaults();
      if (spec.equals("agentic-fork")) {
        p = p.withSubAgentStyle(AgenticParams.SubAgentStyle.FORK);
      }
      if (agents > 0) {
        p = p.withAgents(agents);
      }
      return new Workload.Agents(agents > 0 ? spec + "-" + agents : spec, AgenticWorkload.generate(p, seed), p.blockSize());
    }
    int colon = spec.indexOf(':');
    String kind = spec.substring(0, colon);
    Path path = Path.of(spec.substring(colon + 1));
    List<TraceRequest> trace = kind.equals("mooncake") ? MooncakeTraceReader.read(path) : AffinityTrace.read(path);
    if (limit > 0 && limit < trace.size()) {
      trace = trace.subList(0, limit);
    }
    String file = path.getFileName().toString().replaceFirst("\\.jsonl?$", "");
    return new Workload.Trace(kind + "-" + file + (limit > 0 ? "-" + trace.size() : ""), trace);
  }

  private IllegalArgumentException unknown() {
    return new IllegalArgumentException("unknown workload \"" + spec + "\"; use agentic, agentic-fork, mooncake:PATH or trace:PATH");
  }
}
