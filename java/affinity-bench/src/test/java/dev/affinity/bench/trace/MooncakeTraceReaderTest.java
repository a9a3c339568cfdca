package dev.affinity.bench.trace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class MooncakeTraceReaderTest {
  private static final String EXCERPT = "/traces/mooncake/conversation_trace_head300.jsonl";

  static List<TraceRequest> excerpt() throws IOException {
    try (BufferedReader in = new BufferedReader(new InputStreamReader(
        MooncakeTraceReaderTest.class.getResourceAsStream(EXCERPT), StandardCharsets.UTF_8))) {
      return MooncakeTraceReader.read(in, EXCERPT);
    }
  }

  private static List<TraceRequest> parse(String text) throws IOException {
    return MooncakeTraceReader.read(new BufferedReader(new StringReader(text)), "t.jsonl");
  }

  @Test
  void readsTheCommittedExcerpt() throws IOException {
    List<TraceRequest> trace = excerpt();
    assertEquals(300, trace.size());
    TraceRequest first = trace.get(0);
    assertEquals(6758, first.inputLength());
    assertEquals(500, first.outputLength());
    assertEquals(512, first.blockSize());
    assertEquals(14, first.hashIds().size());
    assertEquals(List.of(0L, 1L, 2L), first.hashIds().subList(0, 3));
    assertNull(first.sessionId(), "the conversation trace has no session ids");
    for (int i = 1; i < trace.size(); i++) {
      assertTrue(trace.get(i).arrivalMs() > trace.get(i - 1).arrivalMs(), "arrivals strictly increase after spreading, line " + (i + 1));
    }
    // every request shares block 0 (the trace's quirk)
    assertTrue(trace.stream().allMatch(r -> r.hashIds().get(0) == 0L));
  }

  @Test
  void spreadsEachTimestampStepEvenlyInFileOrder() throws IOException {
    String line = ", \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [0, 1]}\n";
    List<TraceRequest> trace = parse("{\"timestamp\": 0" + line + "{\"timestamp\": 0" + line + "{\"timestamp\": 0" + line
        + "{\"timestamp\": 3000" + line + "{\"timestamp\": 3000" + line);
    double[] arrivals = trace.stream().mapToDouble(TraceRequest::arrivalMs).toArray();
    assertArrayEquals(new double[] {0, 1000, 2000, 3000, 4500}, arrivals, 1e-9,
        "three requests over the 3000 ms step; the last step reuses the previous gap");
  }

  @Test
  void aSingleStepTraceKeepsItsTimestamps() throws IOException {
    String line = "{\"timestamp\": 7, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [3]}\n";
    List<TraceRequest> trace = parse(line + line);
    assertEquals(List.of(7.0, 7.0), trace.stream().map(TraceRequest::arrivalMs).toList());
  }

  @Test
  void ignoresBlankLinesAndExtraFields() throws IOException {
    List<TraceRequest> trace = parse("\n{\"timestamp\": 0, \"input_length\": 512, \"output_length\": 2, \"hash_ids\": [9], "
        + "\"extra\": true}\n\n");
    assertEquals(1, trace.size());
    assertEquals(List.of(9L), trace.get(0).hashIds());
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [0]}|hash_ids' has 1 ids but input_length 600 needs ceil(600 / 512) = 2",
      "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 5}|missing field 'hash_ids'",
      "{\"timestamp\": 0, \"output_length\": 5, \"hash_ids\": [0]}|missing field 'input_length'",
      "{\"timestamp\": \"0\", \"input_length\": 5, \"output_length\": 5, \"hash_ids\": [0]}|field 'timestamp' must be an integer",
      "{\"timestamp\": 0, \"input_length\": 5.5, \"output_length\": 5, \"hash_ids\": [0]}|field 'input_length' must be an integer",
      "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 0, \"hash_ids\": [0]}|field 'output_length' must be >= 1",
      "{\"timestamp\": -3, \"input_length\": 5, \"output_length\": 5, \"hash_ids\": [0]}|field 'timestamp' must be >= 0",
      "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 5, \"hash_ids\": [-1]}|field 'hash_ids[0]' must be >= 0",
      "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 5, \"hash_ids\": 4}|field 'hash_ids' must be an array",
      "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 5, \"hash_ids\": [\"a\"]}|field 'hash_ids[0]' must be an integer",
      "{\"timestamp\": 0, \"input_length\": 99999999999, \"output_length\": 5, \"hash_ids\": [0]}|field 'input_length' is too large",
      "{\"timestamp\": 0, \"input_length\": 5, |malformed JSON at column",
      "[1, 2]|expected a JSON object, found array",
      "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 5, \"hash_ids\": [0]} {}|malformed JSON",
  })
  void malformedLinesNameTheLineAndTheField(String bad, String expected) {
    String good = "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 5, \"hash_ids\": [0]}\n";
    TraceFormatException e = assertThrows(TraceFormatException.class, () -> parse(good + "\n" + bad + "\n" + good));
    assertEquals(3, e.line(), e.getMessage());
    assertTrue(e.getMessage().startsWith("t.jsonl:3: "), e.getMessage());
    assertTrue(e.getMessage().contains(expected), e.getMessage());
  }

  @Test
  void decreasingTimestampsAreRejected() {
    String text = "{\"timestamp\": 3000, \"input_length\": 5, \"output_length\": 5, \"hash_ids\": [0]}\n"
        + "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 5, \"hash_ids\": [0]}\n";
    TraceFormatException e = assertThrows(TraceFormatException.class, () -> parse(text));
    assertEquals("t.jsonl:2: timestamp 0 is earlier than the previous line's 3000", e.getMessage());
  }

  @Test
  void sharedChainedIdsGiveIdenticalTokenPrefixes() throws IOException {
    List<TraceRequest> trace = excerpt();
    BlockTokens blocks = new BlockTokens(32_000, 0);
    TraceRequest a = trace.get(0);
    int[] ta = blocks.tokens(a);
    assertEquals(a.inputLength(), ta.length);
    assertArrayEquals(ta, blocks.tokens(a), "deterministic");
    boolean sawDivergence = false;
    for (TraceRequest b : trace.subList(1, trace.size())) {
      int[] tb = blocks.tokens(b);
      int shared = 0;
      while (shared < Math.min(a.hashIds().size(), b.hashIds().size()) && a.hashIds().get(shared).equals(b.hashIds().get(shared))) {
        shared++;
      }
      int fullShared = Math.min(shared * 512, Math.min(ta.length, tb.length));
      assertArrayEquals(Arrays.copyOf(ta, fullShared), Arrays.copyOf(tb, fullShared), "shared blocks, shared tokens");
      if (shared < a.hashIds().size() && shared < b.hashIds().size() && (shared + 1) * 512 <= Math.min(ta.length, tb.length)) {
        int from = shared * 512;
        assertFalse(Arrays.equals(ta, from, from + 512, tb, from, from + 512), "different ids, different tokens");
        sawDivergence = true;
      }
    }
    assertTrue(sawDivergence);
    assertTrue(Arrays.stream(ta).allMatch(t -> t >= 0 && t < 32_000));
    assertFalse(Arrays.equals(ta, new BlockTokens(32_000, 1).tokens(a)), "the salt separates traces");
  }
}
