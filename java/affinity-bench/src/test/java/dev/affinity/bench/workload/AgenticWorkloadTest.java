package dev.affinity.bench.workload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.bench.trace.AffinityTrace;
import dev.affinity.bench.trace.TraceRequest;
import dev.affinity.bench.workload.AgenticParams.SubAgentStyle;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class AgenticWorkloadTest {
  private static final AgenticParams FANOUT = AgenticParams.defaults().withAgents(12).withFanOutProbability(0.3);

  /** How many leading ids two calls share. */
  private static int shared(AgentCall a, AgentCall b) {
    int n = 0;
    while (n < Math.min(a.hashIds().size(), b.hashIds().size()) && a.hashIds().get(n).equals(b.hashIds().get(n))) {
      n++;
    }
    return n;
  }

  private static List<AgentScript> subAgents(List<AgentScript> agents) {
    List<AgentScript> subs = new ArrayList<>();
    for (AgentScript a : agents) {
      a.calls().forEach(c -> subs.addAll(c.spawns()));
    }
    return subs;
  }

  @Test
  void theSameSeedGivesTheSameWorkload() {
    assertEquals(AgenticWorkload.generate(FANOUT, 7), AgenticWorkload.generate(FANOUT, 7));
    assertNotEquals(AgenticWorkload.generate(FANOUT, 7), AgenticWorkload.generate(FANOUT, 8));
  }

  @Test
  void agentsOfATypeShareTheFrameworkPrefixAndTypesDiffer() {
    AgenticParams p = AgenticParams.defaults();
    List<AgentScript> agents = AgenticWorkload.generate(p, 1);
    int frameworkBlocks = p.frameworkTokens() / p.blockSize();
    List<AgentCall> firsts = agents.stream().map(a -> a.calls().get(0)).toList();
    List<Long> heads = firsts.stream().map(c -> c.hashIds().get(0)).distinct().toList();
    assertEquals(p.agentTypes(), heads.size(), "one framework prefix per agent type");
    for (AgentCall a : firsts) {
      for (AgentCall b : firsts) {
        int s = shared(a, b);
        if (a.hashIds().get(0).equals(b.hashIds().get(0)) && a != b) {
          assertTrue(s >= frameworkBlocks, "same type shares the framework's full blocks");
          assertTrue(s <= (p.frameworkTokens() + p.taskTokens()) / p.blockSize(), "but not each other's task");
          assertTrue(s < a.hashIds().size());
        }
      }
    }
  }

  @Test
  void eachTurnExtendsThePreviousPromptAndItsResponse() {
    AgenticParams p = AgenticParams.defaults();
    for (AgentScript agent : AgenticWorkload.generate(p, 3)) {
      assertNull(agent.parentSessionId());
      for (int k = 1; k < agent.calls().size(); k++) {
        AgentCall prev = agent.calls().get(k - 1);
        AgentCall next = agent.calls().get(k);
        assertTrue(next.inputLength() > prev.inputLength() + prev.outputLength(), "history grows by response + new input");
        // the previous prompt's full blocks are reused; its partial last block now holds more tokens
        assertEquals(prev.inputLength() / p.blockSize(), shared(prev, next), "every full block of the previous prompt is reused");
        assertTrue(next.inputLength() <= p.maxContextTokens());
        assertTrue(next.thinkBeforeMs() >= 0);
      }
      assertEquals(0.0, agent.calls().get(0).thinkBeforeMs());
    }
  }

  @Test
  void forkedSubAgentsInheritTheParentsContext() {
    AgenticParams p = FANOUT.withSubAgentStyle(SubAgentStyle.FORK);
    List<AgentScript> agents = AgenticWorkload.generate(p, 5);
    int checked = 0;
    for (AgentScript parent : agents) {
      for (AgentCall call : parent.calls()) {
        int parentContextBlocks = (call.inputLength() + call.outputLength()) / p.blockSize();
        for (AgentScript sub : call.spawns()) {
          assertEquals(parent.sessionId(), sub.parentSessionId(), "the sub-agent sends its parent's session id");
          AgentCall first = sub.calls().get(0);
          assertTrue(shared(call, first) >= call.inputLength() / p.blockSize(), "the fork reuses the parent's prompt");
          for (AgentScript sibling : call.spawns()) {
            if (sibling != sub) {
              assertTrue(shared(first, sibling.calls().get(0)) >= parentContextBlocks, "siblings share the parent's context");
              assertTrue(shared(first, sibling.calls().get(0)) < first.hashIds().size(), "but not their tasks");
            }
          }
          checked++;
        }
      }
    }
    assertTrue(checked > 5, "the workload has sub-agents: " + checked);
  }

  @Test
  void freshSubAgentsShareOnlyTheirTypePromptWithSiblings() {
    AgenticParams p = FANOUT;  // FRESH by default
    assertEquals(SubAgentStyle.FRESH, p.subAgentStyle());
    List<AgentScript> agents = AgenticWorkload.generate(p, 5);
    List<AgentScript> subs = subAgents(agents);
    assertTrue(subs.size() > 5);
    int typeBlocks = p.subAgentFrameworkTokens() / p.blockSize();
    for (AgentScript parent : agents) {
      for (AgentCall call : parent.calls()) {
        for (AgentScript sub : call.spawns()) {
          AgentCall first = sub.calls().get(0);
          assertEquals(0, shared(call, first), "a fresh sub-agent shares nothing with its parent (as measured)");
          assertTrue(sub.calls().size() >= 1 && sub.calls().size() <= p.subAgentCallsMax());
        }
      }
    }
    long types = subs.stream().map(s -> s.calls().get(0).hashIds().get(0)).distinct().count();
    assertEquals(p.subAgentTypes(), types);
    for (AgentScript a : subs) {
      for (AgentScript b : subs) {
        if (a != b && a.calls().get(0).hashIds().get(0).equals(b.calls().get(0).hashIds().get(0))) {
          int s = shared(a.calls().get(0), b.calls().get(0));
          assertTrue(s >= typeBlocks && s <= (p.subAgentFrameworkTokens() + p.subAgentTaskTokens()) / p.blockSize());
        }
      }
    }
  }

  @Test
  void fanOutsSpawnOneToMaxSubAgents() {
    List<AgentScript> agents = AgenticWorkload.generate(FANOUT, 11);
    int[] sizes = agents.stream().flatMap(a -> a.calls().stream()).mapToInt(c -> c.spawns().size()).filter(n -> n > 0).toArray();
    assertTrue(sizes.length > 3);
    assertTrue(Arrays.stream(sizes).allMatch(n -> n >= 1 && n <= FANOUT.maxSubAgents()));
    assertTrue(Arrays.stream(sizes).distinct().count() > 1, "fan-out sizes vary");
    AgenticParams none = FANOUT.withFanOutProbability(0);
    assertTrue(subAgents(AgenticWorkload.generate(none, 11)).isEmpty());
  }

  @Test
  void distributionsFollowTheParameters() {
    AgenticParams p = AgenticParams.defaults().withAgents(400).withFanOutProbability(0);
    List<AgentScript> agents = AgenticWorkload.generate(p, 2);
    int[] outputs = agents.stream().flatMap(a -> a.calls().stream()).mapToInt(AgentCall::outputLength).sorted().toArray();
    int medianOutput = outputs[outputs.length / 2];
    assertTrue(medianOutput > 180 && medianOutput < 250, "output median near 216: " + medianOutput);
    double meanOutput = Arrays.stream(outputs).average().orElseThrow();
    assertTrue(meanOutput > 350 && meanOutput < 550, "output mean near 440: " + meanOutput);
    double lastStart = agents.get(agents.size() - 1).startMs();
    assertTrue(lastStart > 600_000 && lastStart < 1_000_000, "400 starts at 0.5/s take about 800 s: " + lastStart);
  }

  @Test
  void theOpenLoopTraceCarriesEveryCallWithItsSessionHeaders() throws IOException {
    List<AgentScript> agents = AgenticWorkload.generate(FANOUT, 9);
    List<TraceRequest> trace = AgenticWorkload.openLoop(agents, FANOUT.blockSize());
    assertEquals(agents.stream().mapToInt(AgentScript::totalCalls).sum(), trace.size());
    for (int i = 1; i < trace.size(); i++) {
      assertTrue(trace.get(i).arrivalMs() >= trace.get(i - 1).arrivalMs());
    }
    assertTrue(trace.stream().anyMatch(r -> r.parentSessionId() != null));
    assertTrue(trace.stream().allMatch(r -> r.sessionId() != null));
    StringWriter out = new StringWriter();
    AffinityTrace.write(trace, out);
    assertEquals(trace, AffinityTrace.read(new BufferedReader(new StringReader(out.toString())), "w"), "writable in Affinity's format");
  }

  @Test
  void badParametersNameTheParameter() {
    AgenticParams d = AgenticParams.defaults();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> d.withFanOutProbability(1.5));
    assertTrue(e.getMessage().contains("fan_out_probability"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> d.withAgents(0));
    assertTrue(e.getMessage().contains("agents"), e.getMessage());
  }
}
