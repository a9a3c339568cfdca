package dev.affinity.bench.drive;

import dev.affinity.bench.trace.TraceRequest;
import dev.affinity.bench.workload.AgentScript;
import java.util.List;

/** What a run plays: an open-loop trace or closed-loop agents. */
public sealed interface Workload permits Workload.Trace, Workload.Agents {
  String name();

  /** Requests the workload sends in all. */
  int requests();

  /** Starts the workload on {@code driver} (its requests are scheduled from the driver's now). */
  void start(WorkloadDriver driver);

  /** An open-loop trace: each request at its arrival time. */
  record Trace(String name, List<TraceRequest> trace) implements Workload {
    public Trace {
      trace = List.copyOf(trace);
    }

    @Override
    public int requests() {
      return trace.size();
    }

    @Override
    public void start(WorkloadDriver driver) {
      driver.startOpenLoop(trace);
    }
  }

  /**
   * Closed-loop agents; {@code blockSize} tokens per hash id.
   *
   * @param thinkDuringSubAgents whether a call's think time runs alongside the sub-agents the previous
   *     call spawned (recorded traces) instead of after them (the agentic generator)
   */
  record Agents(String name, List<AgentScript> agents, int blockSize, boolean thinkDuringSubAgents) implements Workload {
    public Agents {
      agents = List.copyOf(agents);
    }

    /** Agents whose think times follow their sub-agents. */
    public Agents(String name, List<AgentScript> agents, int blockSize) {
      this(name, agents, blockSize, false);
    }

    @Override
    public int requests() {
      return agents.stream().mapToInt(AgentScript::totalCalls).sum();
    }

    @Override
    public void start(WorkloadDriver driver) {
      driver.startClosedLoop(agents, blockSize, thinkDuringSubAgents);
    }
  }
}
