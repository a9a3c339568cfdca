package dev.affinity.bench.workload;

import dev.affinity.bench.trace.TraceRequest;
import dev.affinity.bench.workload.AgenticParams.SubAgentStyle;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Generates agentic workloads (docs/workloads.md): main agents whose prompts start with their
 * type's framework prefix and grow turn by turn, and sub-agents spawned in fan-outs of 1..N that
 * either fork the parent's context or start from their own type prompt. The same parameters and
 * seed always give the same scripts.
 *
 * <p>{@link #generate} gives closed-loop scripts (each call waits for the previous response plus
 * its think time); {@link #openLoop} flattens them into a trace with arrivals computed as if every
 * response were instant, for open-loop replay and for writing in Affinity's trace format.
 */
public final class AgenticWorkload {
  private static final double Z90 = 1.2815515655446004;
  private static final long SUB_AGENT_TYPE_BASE = 1L << 20;
  private static final long FRESH_SEGMENT_BASE = 1L << 32;

  private final AgenticParams p;
  private final SplittableRandom random;
  private long nextSegment = FRESH_SEGMENT_BASE;

  private AgenticWorkload(AgenticParams params, long seed) {
    this.p = params;
    this.random = new SplittableRandom(seed);
  }

  /** The main agents' scripts, in start order; sub-agents hang off the calls that spawn them. */
  public static List<AgentScript> generate(AgenticParams params, long seed) {
    return new AgenticWorkload(params, seed).agents();
  }

  private List<AgentScript> agents() {
    List<AgentScript> agents = new ArrayList<>(p.agents());
    double start = 0;
    for (int a = 0; a < p.agents(); a++) {
      if (a > 0) {
        start += -Math.log(1 - random.nextDouble()) / p.agentStartsPerSecond() * 1000;
      }
      agents.add(mainAgent("agent-" + a, start));
    }
    return agents;
  }

  private AgentScript mainAgent(String session, double start) {
    int type = random.nextInt(p.agentTypes());
    Prompt prompt = Prompt.empty().append(type, p.frameworkTokens()).append(segment(), p.taskTokens());
    int turns = (int) Math.min(10_000, Math.max(1, Math.round(logNormal(p.turnsP50(), p.turnsP90()))));
    List<AgentCall> calls = new ArrayList<>(turns);
    for (int k = 0; k < turns; k++) {
      prompt = turnPrompt(prompt, k);
      if (prompt == null) {
        break;
      }
      double think = thinkBefore(k);
      int output = tokens(p.outputP50(), p.outputP90());
      long response = segment();
      Prompt history = prompt.append(response, output);
      List<AgentScript> spawns = List.of();
      if (random.nextDouble() < p.fanOutProbability()) {
        int n = 1 + random.nextInt(p.maxSubAgents());
        spawns = new ArrayList<>(n);
        for (int j = 0; j < n; j++) {
          AgentScript sub = subAgent(session + "-sub-" + k + "-" + j, session, history);
          if (!sub.calls().isEmpty()) {  // a fork of a context already at the limit cannot start
            spawns.add(sub);
          }
        }
      }
      calls.add(new AgentCall(think, prompt.length(), output, prompt.hashIds(p.blockSize()), spawns));
      prompt = history;
    }
    return new AgentScript(session, null, start, withStops(calls));
  }

  private AgentScript subAgent(String session, String parent, Prompt parentContext) {
    Prompt prompt = p.subAgentStyle() == SubAgentStyle.FORK
        ? parentContext
        : Prompt.empty().append(SUB_AGENT_TYPE_BASE + random.nextInt(p.subAgentTypes()), p.subAgentFrameworkTokens());
    prompt = prompt.append(segment(), p.subAgentTaskTokens());
    int n = p.subAgentCallsMin() + random.nextInt(p.subAgentCallsMax() - p.subAgentCallsMin() + 1);
    List<AgentCall> calls = new ArrayList<>(n);
    for (int k = 0; k < n; k++) {
      prompt = turnPrompt(prompt, k);
      if (prompt == null) {
        break;
      }
      int output = tokens(p.outputP50(), p.outputP90());
      calls.add(new AgentCall(thinkBefore(k), prompt.length(), output, prompt.hashIds(p.blockSize()), List.of()));
      prompt = prompt.append(segment(), output);
    }
    return new AgentScript(session, parent, 0, withStops(calls));
  }

  /**
   * An agent's calls with their stop reasons: every call but the last ends in a tool call (the agent's loop: the
   * think time after it is the tool's), the last ends the agent's turn.
   */
  static List<AgentCall> withStops(List<AgentCall> calls) {
    List<AgentCall> out = new ArrayList<>(calls.size());
    for (int i = 0; i < calls.size(); i++) {
      AgentCall c = calls.get(i);
      out.add(new AgentCall(c.thinkBeforeMs(), c.inputLength(), c.outputLength(), c.hashIds(), c.spawns(),
          i + 1 < calls.size() ? TraceRequest.TOOL_USE : "end_turn"));
    }
    return out;
  }

  /**
   * The scripts as an open-loop trace: arrivals as if every response were instant (a call at
   * {@code t} is followed by the next at {@code t + think}; a parent resumes when its last
   * sub-agent's last call has been sent), sorted by arrival.
   */
  public static List<TraceRequest> openLoop(List<AgentScript> agents, int blockSize) {
    List<TraceRequest> out = new ArrayList<>();
    for (AgentScript agent : agents) {
      play(agent, agent.startMs(), blockSize, out);
    }
    out.sort(Comparator.comparingDouble(TraceRequest::arrivalMs));
    return out;
  }

  /** Emits the agent's calls from {@code start}; returns when its last call was sent. */
  private static double play(AgentScript agent, double start, int blockSize, List<TraceRequest> out) {
    double t = start;
    for (AgentCall call : agent.calls()) {
      t += call.thinkBeforeMs();
      out.add(new TraceRequest(t, agent.sessionId(), agent.parentSessionId(), call.inputLength(), call.outputLength(),
          blockSize, call.hashIds(), call.stopReason()));
      double resume = t;
      for (AgentScript sub : call.spawns()) {
        resume = Math.max(resume, play(sub, t, blockSize, out));
      }
      t = resume;
    }
    return t;
  }

  /** Turn {@code k}'s prompt: after the first, the history grown by new input; null past the context limit. */
  private Prompt turnPrompt(Prompt history, int k) {
    Prompt prompt = k == 0 ? history : history.append(segment(), tokens(p.growthP50(), p.growthP90()));
    return prompt.length() > p.maxContextTokens() ? null : prompt;
  }

  private double thinkBefore(int k) {
    return k == 0 ? 0 : logNormal(p.thinkP50(), p.thinkP90());
  }

  private long segment() {
    return nextSegment++;
  }

  private int tokens(int p50, int p90) {
    return (int) Math.max(1, Math.min(1_000_000, Math.round(logNormal(p50, p90))));
  }

  private double logNormal(double p50, double p90) {
    if (p50 <= 0) {
      return 0;
    }
    double sigma = Math.log(p90 / p50) / Z90;
    return p50 * Math.exp(sigma * random.nextGaussian());
  }
}
