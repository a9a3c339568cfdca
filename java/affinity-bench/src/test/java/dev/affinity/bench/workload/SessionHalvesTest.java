package dev.affinity.bench.workload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.bench.compare.WorkloadSpec;
import dev.affinity.bench.trace.ClaudeCodeTrace;
import dev.affinity.bench.trace.ClaudeCodeTraceReader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The fixed two halves of a directory of recorded sessions. */
class SessionHalvesTest {
  private static Path dir() throws Exception {
    return Path.of(SessionHalvesTest.class.getResource("/traces/claude-code/trace_0026.json").toURI()).getParent();
  }

  private static ClaudeCodeTrace named(String source) {
    return new ClaudeCodeTrace(source, source, 32, new ClaudeCodeTrace.Agent("a", "main", 0, 0, List.of()));
  }

  @Test
  void theHalvesPartitionTheSessionsInTheirOrderAndDependOnlyOnNamesAndSeed() {
    List<ClaudeCodeTrace> all = new ArrayList<>();
    for (int i = 0; i < 57; i++) {
      all.add(named(String.format("trace_%04d.json", i)));
    }
    List<ClaudeCodeTrace> a = SessionHalves.half(all, "a", 1);
    List<ClaudeCodeTrace> b = SessionHalves.half(all, "b", 1);
    assertEquals(29, a.size(), "ceil(57 / 2)");
    assertEquals(28, b.size());
    Set<ClaudeCodeTrace> union = new HashSet<>(a);
    union.addAll(b);
    assertEquals(57, union.size(), "disjoint and complete");
    assertTrue(all.indexOf(a.get(0)) < all.indexOf(a.get(1)), "the directory's order");
    List<ClaudeCodeTrace> reversed = new ArrayList<>(all);
    java.util.Collections.reverse(reversed);
    assertEquals(new HashSet<>(a), new HashSet<>(SessionHalves.half(reversed, "a", 1)), "the names decide, not the order");
    List<ClaudeCodeTrace> more = new ArrayList<>(all);
    more.add(named("trace_0100.json"));
    assertTrue(new HashSet<>(SessionHalves.half(more, "a", 1)).containsAll(a)
        || new HashSet<>(SessionHalves.half(more, "b", 1)).containsAll(b), "one more session moves at most one other");
    assertTrue(!new HashSet<>(a).equals(new HashSet<>(SessionHalves.half(all, "a", 2))), "another seed, another split");
  }

  @Test
  void badHalvesAreRefused() {
    List<ClaudeCodeTrace> two = List.of(named("x.json"), named("y.json"));
    assertThrows(IllegalArgumentException.class, () -> SessionHalves.half(two, "c", 1));
    assertThrows(IllegalArgumentException.class, () -> SessionHalves.half(two.subList(0, 1), "a", 1));
  }

  @Test
  void aWorkloadNamesItsHalf() throws Exception {
    String base = "claude-code:" + dir();
    List<String> sources = new ArrayList<>();
    for (ClaudeCodeTrace t : ClaudeCodeTraceReader.readDirectory(dir())) {
      sources.add(t.source());
    }
    WorkloadSpec a = new WorkloadSpec(base + "#half=a", 0, 0);
    WorkloadSpec b = new WorkloadSpec(base + "#half=b", 0, 0);
    assertEquals("claude-code-a-2", a.create(1).name(), "2 of the 3 sessions, one user each");
    assertEquals("claude-code-b-1", b.create(1).name());
    assertEquals("claude-code-3", new WorkloadSpec(base, 0, 0).create(1).name());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new WorkloadSpec(base + "#half=c", 0, 0).validate());
    assertTrue(e.getMessage().contains("half must be a or b"), e.getMessage());
    assertEquals(3, sources.size());
  }
}
