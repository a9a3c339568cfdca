package dev.affinity.bench.workload;

import dev.affinity.bench.trace.ClaudeCodeTrace;
import dev.affinity.bench.trace.ClaudeCodeTrace.Agent;
import dev.affinity.bench.trace.ClaudeCodeTrace.Call;
import dev.affinity.bench.trace.ClaudeCodeTrace.Entry;
import dev.affinity.bench.trace.ClaudeCodeTrace.SubAgent;
import dev.affinity.bench.trace.TraceRequest;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Claude Code session traces ({@link ClaudeCodeTrace}) as users of the same workload model as the
 * agentic generator (docs/workloads.md): user {@code u} replays trace {@code u mod T} (traces in file
 * order, cycling when there are more users than traces) as one main agent with its own session id
 * ({@code user-<u>}); a {@code subagent} entry spawns a sub-agent with its own session id that carries
 * the parent's in the sub-agent header; sub-agents listed together run concurrently and the parent goes
 * on when all of them have finished. Users start as a Poisson process drawn from the seed.
 *
 * <p>Prompts: a call's block ids become ids of the user's own namespace (sub-agents share their
 * parent's), so copies of one trace share nothing; the blocks a trace gives no id (its last, partial
 * block) get ids of their own. With {@code sharedSystemPrompt} every session of an agent kind (the main
 * agents; each sub-agent type) begins with the same first {@code system_tokens + tool_tokens} tokens
 * (whole blocks), wherever its prompt still begins with its first call's: an assumption, since the
 * traces do not say whether sessions shared a system prompt.
 *
 * <p>Timing: a call's think time is its {@code think_time} or, when missing, the gap the timestamps
 * leave after the previous call's {@code api_time} (or the whole gap when that is missing too), capped
 * at {@code thinkCapSeconds}. Closed loop (the default): a call is sent its think time after the
 * previous response, and after its sub-agents have finished (think time and sub-agents overlap, as
 * in the publisher's replay tool). Open loop: each call at its recorded time {@code t} from the
 * user's start, less the think time the cap removed before it.
 */
public final class ClaudeCodeWorkload {
  /** The workload's user-facing name prefix. */
  public static final String NAME = "claude-code";
  private static final long SHARED = 1L << 61;
  private static final long PRIVATE = 1L << 62;
  private static final int MAX_USERS = 1 << 28;

  /**
   * @param users               users to replay; 0 for one per trace
   * @param userStartsPerSecond Poisson rate of user starts
   * @param thinkCapSeconds     think times are capped at this
   * @param sharedSystemPrompt  whether all sessions of a kind share their system prompt and tools
   * @param openLoop            replay at the recorded times instead of after each response
   */
  public record Options(int users, double userStartsPerSecond, double thinkCapSeconds, boolean sharedSystemPrompt,
      boolean openLoop) {
    public Options {
      if (users < 0 || users >= MAX_USERS) {
        throw new IllegalArgumentException("users must be in [0, " + MAX_USERS + "), got " + users);
      }
      if (!(userStartsPerSecond > 0) || !Double.isFinite(userStartsPerSecond)) {
        throw new IllegalArgumentException("user starts per second must be > 0, got " + userStartsPerSecond);
      }
      if (!(thinkCapSeconds >= 0) || Double.isNaN(thinkCapSeconds)) {
        throw new IllegalArgumentException("think cap must be >= 0 seconds, got " + thinkCapSeconds);
      }
    }

    /** One user per trace, 0.1 starts per second, think times capped at 60 s, no shared prompt, closed loop. */
    public static Options defaults() {
      return new Options(0, 0.1, 60, false, false);
    }

    public Options withUsers(int n) {
      return new Options(n, userStartsPerSecond, thinkCapSeconds, sharedSystemPrompt, openLoop);
    }

    /** The users of a run over {@code traces} traces. */
    public int usersFor(int traces) {
      return users > 0 ? users : traces;
    }
  }

  private final List<ClaudeCodeTrace> traces;
  private final Options options;
  private final Map<String, Long> kinds = new HashMap<>();

  private ClaudeCodeWorkload(List<ClaudeCodeTrace> traces, Options options) {
    if (traces.isEmpty()) {
      throw new IllegalArgumentException("no traces");
    }
    this.traces = List.copyOf(traces);
    this.options = options;
    kinds.put("main", 0L);
  }

  /** The workload's name for {@code users} users (e.g. {@code claude-code-57}). */
  public static String name(Options options, int traces) {
    return NAME + (options.openLoop() ? "-open-" : "-") + options.usersFor(traces);
  }

  /** The users as closed-loop agents, in start order. */
  public static List<AgentScript> agents(List<ClaudeCodeTrace> traces, Options options, long seed) {
    ClaudeCodeWorkload w = new ClaudeCodeWorkload(traces, options);
    double[] starts = w.starts(seed);
    List<AgentScript> out = new ArrayList<>(starts.length);
    for (int u = 0; u < starts.length; u++) {
      ClaudeCodeTrace t = w.traces.get(u % w.traces.size());
      out.add(w.script(t.main(), "user-" + u, null, w.new Namespace(u + 1L, t.blockSize()), starts[u]));
    }
    return out;
  }

  /** The users as an open-loop trace, sorted by arrival. */
  public static List<TraceRequest> openLoop(List<ClaudeCodeTrace> traces, Options options, long seed) {
    ClaudeCodeWorkload w = new ClaudeCodeWorkload(traces, options);
    double[] starts = w.starts(seed);
    List<TraceRequest> out = new ArrayList<>();
    for (int u = 0; u < starts.length; u++) {
      ClaudeCodeTrace t = w.traces.get(u % w.traces.size());
      w.play(t.main(), "user-" + u, null, w.new Namespace(u + 1L, t.blockSize()), starts[u], out);
    }
    out.sort(Comparator.comparingDouble(TraceRequest::arrivalMs));
    return out;
  }

  /** User start times (ms): the first at 0, then exponential gaps. */
  private double[] starts(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    double[] starts = new double[options.usersFor(traces.size())];
    for (int u = 1; u < starts.length; u++) {
      starts[u] = starts[u - 1] - Math.log(1 - random.nextDouble()) / options.userStartsPerSecond() * 1000;
    }
    return starts;
  }

  private AgentScript script(Agent agent, String session, String parent, Namespace ns, double startMs) {
    List<List<AgentScript>> spawnsAfter = new ArrayList<>();
    List<AgentScript> initial = new ArrayList<>();
    List<Call> calls = new ArrayList<>();
    Ids ids = new Ids(agent, ns);
    int sub = 0;
    for (Entry e : agent.entries()) {
      if (e instanceof SubAgent s) {
        AgentScript child = script(s.agent(), session + "-sub-" + (sub++) + "-" + s.agent().agentId(), session, ns, 0);
        (calls.isEmpty() ? initial : spawnsAfter.get(calls.size() - 1)).add(child);
      } else {
        calls.add((Call) e);
        spawnsAfter.add(new ArrayList<>());
      }
    }
    List<AgentCall> out = new ArrayList<>(calls.size());
    for (int i = 0; i < calls.size(); i++) {
      Call c = calls.get(i);
      double think = Math.min(thinkSeconds(calls, i), options.thinkCapSeconds()) * 1000;
      out.add(new AgentCall(think, c.inputTokens(), Math.max(1, c.outputTokens()), ids.of(c), spawnsAfter.get(i), c.stop()));
    }
    return new AgentScript(session, parent, startMs, out, initial);
  }

  /** Emits the agent's calls from {@code startMs} at their recorded times, less the think time the cap removed. */
  private void play(Agent agent, String session, String parent, Namespace ns, double startMs, List<TraceRequest> out) {
    Ids ids = new Ids(agent, ns);
    List<Call> calls = new ArrayList<>();
    double removedS = 0;
    int sub = 0;
    for (Entry e : agent.entries()) {
      if (e instanceof SubAgent s) {
        double at = startMs + Math.max(0, s.t() - removedS) * 1000;
        play(s.agent(), session + "-sub-" + (sub++) + "-" + s.agent().agentId(), session, ns, at, out);
        continue;
      }
      Call c = (Call) e;
      calls.add(c);
      removedS += Math.max(0, thinkSeconds(calls, calls.size() - 1) - options.thinkCapSeconds());
      double at = startMs + Math.max(0, c.t() - removedS) * 1000;
      out.add(new TraceRequest(at, session, parent, c.inputTokens(), Math.max(1, c.outputTokens()), ns.blockSize, ids.of(c),
          c.stop()));
    }
  }

  /**
   * Call {@code i}'s think time, uncapped: its {@code think_time}, else what the timestamps leave after
   * the previous call's {@code api_time} (the whole gap without it; {@code t} itself for a first call).
   */
  static double thinkSeconds(List<Call> calls, int i) {
    Call c = calls.get(i);
    if (!Double.isNaN(c.thinkTimeS())) {
      return c.thinkTimeS();
    }
    if (i == 0) {
      return c.t();
    }
    Call prev = calls.get(i - 1);
    double gap = c.t() - prev.t() - (Double.isNaN(prev.apiTimeS()) ? 0 : prev.apiTimeS());
    return Math.max(0, gap);
  }

  /** One user's id space: its trace's ids, and ids for the blocks the trace gives none (shared by its agents). */
  private final class Namespace {
    final long id;
    final int blockSize;
    long nextPrivate;

    Namespace(long id, int blockSize) {
      this.id = id;
      this.blockSize = blockSize;
      this.nextPrivate = PRIVATE | (id << 32);
    }
  }

  /** Maps one agent's block ids into its user's namespace (and its shared prompt into its kind's). */
  private final class Ids {
    private final Namespace ns;
    private final long kind;
    private final long[] reference;
    private final int sharedBlocks;

    Ids(Agent agent, Namespace ns) {
      this.ns = ns;
      this.kind = kinds.computeIfAbsent(agent.kind(), k -> (long) kinds.size());
      Call first = null;
      for (Entry e : agent.entries()) {
        if (e instanceof Call c) {
          first = c;
          break;
        }
      }
      this.reference = first == null ? new long[0] : first.hashIds();
      this.sharedBlocks = options.sharedSystemPrompt()
          ? (int) Math.min(reference.length, ((long) agent.systemTokens() + agent.toolTokens()) / ns.blockSize) : 0;
    }

    List<Long> of(Call c) {
      long[] h = c.hashIds();
      int blocks = TraceRequest.blocksFor(c.inputTokens(), ns.blockSize);
      List<Long> out = new ArrayList<>(blocks);
      int shared = 0;
      while (shared < sharedBlocks && shared < h.length && h[shared] == reference[shared]) {
        out.add(SHARED | (kind << 32) | shared);
        shared++;
      }
      for (int k = shared; k < h.length; k++) {
        out.add((ns.id << 32) | h[k]);
      }
      for (int k = h.length; k < blocks; k++) {
        out.add(ns.nextPrivate++);
      }
      return out;
    }
  }
}
