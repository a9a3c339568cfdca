package dev.affinity.bench.trace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.bench.trace.ClaudeCodeTrace.Call;
import dev.affinity.bench.trace.ClaudeCodeTrace.SubAgent;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The Claude Code trace format: the committed real traces, sub-agents, tolerated gaps and errors. */
public class ClaudeCodeTraceReaderTest {
  static Path resources() throws Exception {
    return Path.of(ClaudeCodeTraceReaderTest.class.getResource("/traces/claude-code/trace_0026.json").toURI()).getParent();
  }

  /** A small session with two sub-agents spawned together, in the publisher's format. */
  public static final String WITH_SUBAGENTS = """
      {"id": "s1", "block_size": 64, "tool_tokens": 100, "system_tokens": 28, "requests": [
        {"t": 0.0, "type": "n", "in": 200, "out": 10, "hash_ids": [1, 2, 3], "api_time": 1.0, "think_time": 0.0},
        {"t": 5.0, "type": "subagent", "agent_id": "agent_001", "subagent_type": "Explore", "tool_tokens": 64,
         "system_tokens": 0, "requests": [
          {"t": 0.0, "type": "n", "in": 130, "out": 5, "hash_ids": [50, 51], "api_time": 0.5, "think_time": 0.0},
          {"t": 2.0, "type": "n", "in": 140, "out": 0, "hash_ids": [50, 51], "api_time": 0.5, "think_time": 1.5}]},
        {"t": 6.0, "type": "subagent", "agent_id": "agent_002", "subagent_type": "Explore", "tool_tokens": 64,
         "system_tokens": 0, "requests": [
          {"t": 0.0, "type": "n", "in": 70, "out": 5, "hash_ids": [60], "api_time": 0.5, "think_time": 0.0}]},
        {"t": 300.0, "type": "s", "in": 260, "out": 7, "hash_ids": [1, 2, 3, 4], "think_time": 299.0}
      ]}
      """;

  /** trace_0058's calls' {@code stop}: three recorded empty (unknown), then end_turn. */
  private static final List<String> STOPS_0058 = java.util.Arrays.asList(null, null, null, "end_turn");

  @Test
  void readsTheCommittedTracesWithTheirGaps() throws Exception {
    List<ClaudeCodeTrace> traces = ClaudeCodeTraceReader.readDirectory(resources());
    assertEquals(List.of("trace_0026", "trace_0057", "trace_0058"), traces.stream().map(ClaudeCodeTrace::id).toList());
    assertEquals(List.of(3, 8, 4), traces.stream().map(ClaudeCodeTrace::calls).toList());
    ClaudeCodeTrace t = traces.get(2);
    assertEquals(64, t.blockSize());
    Call first = (Call) t.main().entries().get(0);
    assertEquals(48_296, first.inputTokens());
    assertEquals(754, first.hashIds().length, "one id per whole block: floor(48296 / 64)");
    assertTrue(Double.isNaN(first.apiTimeS()), "api_time missing");
    assertTrue(Double.isNaN(((Call) t.main().entries().get(1)).thinkTimeS()), "think_time missing");
    assertEquals(15_494, t.main().systemTokens() + t.main().toolTokens(), "system prompt and tools");
    assertEquals(STOPS_0058, t.main().entries().stream().map(e -> ((Call) e).stop()).toList(), "each call's stop reason");
    assertEquals(null, ((Call) ClaudeCodeTraceReader.parse(WITH_SUBAGENTS, "s1.json").main().entries().get(0)).stop(),
        "none recorded");
  }

  @Test
  void subAgentsKeepTheirKindPromptAndCalls() {
    ClaudeCodeTrace t = ClaudeCodeTraceReader.parse(WITH_SUBAGENTS, "s1.json");
    assertEquals(5, t.calls());
    SubAgent sub = (SubAgent) t.main().entries().get(1);
    assertEquals(5.0, sub.t());
    assertEquals("agent_001", sub.agent().agentId());
    assertEquals("Explore", sub.agent().kind());
    assertEquals(64, sub.agent().toolTokens());
    assertEquals(2, sub.agent().entries().size());
    assertEquals("main", t.main().kind());
    assertEquals(128, t.main().systemTokens() + t.main().toolTokens());
  }

  @Test
  void errorsNameTheFileAndTheJsonPath() {
    String missingIn = WITH_SUBAGENTS.replace("\"in\": 130, ", "");
    TraceFormatException e = assertThrows(TraceFormatException.class, () -> ClaudeCodeTraceReader.parse(missingIn, "s1.json"));
    assertEquals("s1.json: requests[1].requests[0].in is missing", e.getMessage());
    String tooMany = WITH_SUBAGENTS.replace("\"hash_ids\": [60]", "\"hash_ids\": [60, 61, 62]");
    e = assertThrows(TraceFormatException.class, () -> ClaudeCodeTraceReader.parse(tooMany, "s1.json"));
    assertTrue(e.getMessage().startsWith("s1.json: requests[2].requests[0].hash_ids has 3 ids but in 70 spans only"),
        e.getMessage());
    String negative = WITH_SUBAGENTS.replace("[1, 2, 3]", "[1, -2, 3]");
    e = assertThrows(TraceFormatException.class, () -> ClaudeCodeTraceReader.parse(negative, "s1.json"));
    assertTrue(e.getMessage().startsWith("s1.json: requests[0].hash_ids[1] must be an integer"), e.getMessage());
    e = assertThrows(TraceFormatException.class, () -> ClaudeCodeTraceReader.parse("{\"block_size\": 64", "x.json"));
    assertTrue(e.getMessage().startsWith("x.json: malformed JSON"), e.getMessage());
    e = assertThrows(TraceFormatException.class, () -> ClaudeCodeTraceReader.parse("{\"requests\": []}", "x.json"));
    assertEquals("x.json: block_size is missing", e.getMessage());
  }

  @Test
  void aDirectoryNeedsJsonFiles(@TempDir Path dir) throws IOException {
    IOException e = assertThrows(IOException.class, () -> ClaudeCodeTraceReader.files(dir));
    assertTrue(e.getMessage().startsWith("no *.json trace files in"));
    Files.writeString(dir.resolve("b.json"), WITH_SUBAGENTS);
    Files.writeString(dir.resolve("a.json"), WITH_SUBAGENTS);
    Files.writeString(dir.resolve("notes.md"), "not a trace");
    assertEquals(List.of("a.json", "b.json"), ClaudeCodeTraceReader.files(dir).stream().map(p -> p.getFileName().toString())
        .toList());
  }
}
