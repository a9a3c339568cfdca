package dev.affinity.bench.compare;

import dev.affinity.bench.drive.Workload;
import dev.affinity.bench.trace.AffinityTrace;
import dev.affinity.bench.trace.ClaudeCodeTrace;
import dev.affinity.bench.trace.ClaudeCodeTraceReader;
import dev.affinity.bench.trace.MooncakeTraceReader;
import dev.affinity.bench.trace.TraceRequest;
import dev.affinity.bench.workload.AgenticParams;
import dev.affinity.bench.workload.AgenticWorkload;
import dev.affinity.bench.workload.ClaudeCodeWorkload;
import dev.affinity.bench.workload.SessionHalves;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * A workload named on the command line: {@code agentic} (the agentic generator's defaults, FRESH
 * sub-agents), {@code agentic-fork} (FORK sub-agents), {@code mooncake:PATH} (a Mooncake trace file),
 * {@code trace:PATH} (Affinity's JSONL trace format) or {@code claude-code:DIR} (the Claude Code session
 * traces of a directory, replayed by {@code claude.users()} users); {@code claude-code:DIR#half=a} and
 * {@code #half=b} replay one of the directory's two fixed halves ({@link SessionHalves}).
 *
 * @param agents agents of an agentic workload ({@code <= 0}: the generator's default)
 * @param limit  requests of a trace file to replay, from its start ({@code <= 0}: all)
 * @param claude how Claude Code traces are replayed
 */
public record WorkloadSpec(String spec, int agents, int limit, ClaudeCodeWorkload.Options claude) {
  private static final String CLAUDE = ClaudeCodeWorkload.NAME + ":";
  private static final String HALF = "#half=";

  public WorkloadSpec {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(claude, "claude");
  }

  /** A workload replayed with the Claude Code defaults. */
  public WorkloadSpec(String spec, int agents, int limit) {
    this(spec, agents, limit, ClaudeCodeWorkload.Options.defaults());
  }

  /** Checks the name and, for a trace, that its file (or directory) exists, without reading it. */
  public void validate() {
    if (spec.equals("agentic") || spec.equals("agentic-fork")) {
      return;
    }
    if (spec.startsWith(CLAUDE)) {
      try {
        String half = claudeHalf();
        if (half != null) {
          SessionHalves.checkName(half);
        }
        ClaudeCodeTraceReader.files(claudeDirectory());
      } catch (IOException | IllegalArgumentException e) {
        throw new IllegalArgumentException("workload " + spec + ": " + e.getMessage());
      }
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
    if (spec.startsWith(CLAUDE)) {
      return claudeCode(seed);
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

  private Workload claudeCode(long seed) throws IOException {
    List<ClaudeCodeTrace> traces = ClaudeCodeTraceReader.readDirectory(claudeDirectory());
    String half = claudeHalf();
    if (half != null) {
      try {
        traces = SessionHalves.half(traces, half, SessionHalves.DEFAULT_SEED);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("workload " + spec + ": " + e.getMessage(), e);
      }
    }
    int blockSize = traces.get(0).blockSize();
    for (ClaudeCodeTrace t : traces) {
      if (t.blockSize() != blockSize) {
        throw new IllegalArgumentException("workload " + spec + ": " + t.source() + " has block_size " + t.blockSize()
            + ", " + traces.get(0).source() + " " + blockSize + " (one block size per directory)");
      }
    }
    String name = ClaudeCodeWorkload.name(claude, traces.size());
    if (half != null) {
      name = ClaudeCodeWorkload.NAME + "-" + half + name.substring(ClaudeCodeWorkload.NAME.length());
    }
    if (claude.openLoop()) {
      List<TraceRequest> trace = ClaudeCodeWorkload.openLoop(traces, claude, seed);
      if (limit > 0 && limit < trace.size()) {
        trace = trace.subList(0, limit);
      }
      return new Workload.Trace(name, trace);
    }
    return new Workload.Agents(name, ClaudeCodeWorkload.agents(traces, claude, seed), blockSize, true);
  }

  /** The workload's requests as an open-loop trace (agents as if every response were instant). */
  public List<TraceRequest> asTrace(long seed) throws IOException {
    if (spec.startsWith(CLAUDE)) {
      return ((Workload.Trace) new WorkloadSpec(spec, agents, limit, new ClaudeCodeWorkload.Options(claude.users(),
          claude.userStartsPerSecond(), claude.thinkCapSeconds(), claude.sharedSystemPrompt(), true)).create(seed)).trace();
    }
    Workload w = create(seed);
    return w instanceof Workload.Agents a ? AgenticWorkload.openLoop(a.agents(), a.blockSize()) : ((Workload.Trace) w).trace();
  }

  /** A Claude Code spec's directory: what follows {@code claude-code:}, less a {@code #half=} suffix. */
  private Path claudeDirectory() {
    int at = spec.lastIndexOf(HALF);
    return Path.of(spec.substring(CLAUDE.length(), at < 0 ? spec.length() : at));
  }

  /** A Claude Code spec's half ({@code a} or {@code b} when valid), or null for the whole directory. */
  private String claudeHalf() {
    int at = spec.lastIndexOf(HALF);
    return at < 0 ? null : spec.substring(at + HALF.length());
  }

  private IllegalArgumentException unknown() {
    return new IllegalArgumentException("unknown workload \"" + spec
        + "\"; use agentic, agentic-fork, mooncake:PATH, trace:PATH or claude-code:DIR[#half=a|b]");
  }
}
