package dev.affinity.bench.trace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class AffinityTraceTest {

  private static List<TraceRequest> parse(String text) throws IOException {
    return AffinityTrace.read(new BufferedReader(new StringReader(text)), "a.jsonl");
  }

  private static String write(List<TraceRequest> requests) throws IOException {
    StringWriter out = new StringWriter();
    AffinityTrace.write(requests, out);
    return out.toString();
  }

  @Test
  void theMooncakeExcerptRoundTripsThroughAffinitysFormat(@TempDir Path dir) throws IOException {
    List<TraceRequest> trace = MooncakeTraceReaderTest.excerpt();
    Path file = dir.resolve("trace.jsonl");
    AffinityTrace.write(trace, file);
    assertEquals(trace, AffinityTrace.read(file));
    assertEquals(300, Files.readAllLines(file).size());
  }

  @Test
  void writesTheDocumentedFields() throws IOException {
    TraceRequest r = new TraceRequest(1.5, "sub-1", "main-1", 20, 7, 16, List.of(4L, 5L));
    assertEquals("{\"arrival_ms\":1.5,\"session_id\":\"sub-1\",\"parent_session_id\":\"main-1\",\"input_length\":20,"
        + "\"output_length\":7,\"block_size\":16,\"hash_ids\":[4,5]}\n", write(List.of(r)));
    TraceRequest noSession = new TraceRequest(0, null, null, 16, 1, 16, List.of(4L));
    assertEquals("{\"arrival_ms\":0.0,\"input_length\":16,\"output_length\":1,\"block_size\":16,\"hash_ids\":[4]}\n",
        write(List.of(noSession)));
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "{\"arrival_ms\":1,\"input_length\":16,\"output_length\":1,\"block_size\":16,\"hash_ids\":[4],\"sesion_id\":\"x\"}|unknown field 'sesion_id'",
      "{\"arrival_ms\":1,\"parent_session_id\":\"p\",\"input_length\":16,\"output_length\":1,\"block_size\":16,\"hash_ids\":[4]}|'parent_session_id' needs a 'session_id'",
      "{\"arrival_ms\":1,\"session_id\":\"\",\"input_length\":16,\"output_length\":1,\"block_size\":16,\"hash_ids\":[4]}|field 'session_id' must be a non-empty string",
      "{\"arrival_ms\":1,\"session_id\":3,\"input_length\":16,\"output_length\":1,\"block_size\":16,\"hash_ids\":[4]}|field 'session_id' must be a non-empty string",
      "{\"arrival_ms\":\"1\",\"input_length\":16,\"output_length\":1,\"block_size\":16,\"hash_ids\":[4]}|field 'arrival_ms' must be a number",
      "{\"arrival_ms\":0.5,\"input_length\":16,\"output_length\":1,\"block_size\":16,\"hash_ids\":[4]}|arrival_ms 0.5 is earlier than the previous line's 1.0",
      "{\"arrival_ms\":1,\"input_length\":17,\"output_length\":1,\"block_size\":16,\"hash_ids\":[4]}|needs ceil(17 / 16) = 2",
      "{\"arrival_ms\":1,\"input_length\":16,\"output_length\":1,\"block_size\":0,\"hash_ids\":[4]}|field 'block_size' must be >= 1",
      "{\"arrival_ms\":1,\"input_length\":16,\"output_length\":1,\"hash_ids\":[4]}|missing field 'block_size'",
  })
  void badLinesNameTheLineAndTheField(String bad, String expected) {
    String good = "{\"arrival_ms\":1,\"input_length\":16,\"output_length\":1,\"block_size\":16,\"hash_ids\":[4]}\n";
    TraceFormatException e = assertThrows(TraceFormatException.class, () -> parse(good + bad + "\n"));
    assertTrue(e.getMessage().startsWith("a.jsonl:2: "), e.getMessage());
    assertTrue(e.getMessage().contains(expected), e.getMessage());
  }

  @Property(tries = 200)
  void anyValidTraceRoundTrips(@ForAll("traces") List<TraceRequest> trace) throws IOException {
    assertEquals(trace, parse(write(trace)));
  }

  @Property(tries = 300)
  void arbitraryTextEitherParsesOrFailsWithALineNumber(@ForAll("mangled") String text) throws IOException {
    try {
      parse(text);
    } catch (TraceFormatException e) {
      assertTrue(e.line() >= 1 && e.getMessage().startsWith("a.jsonl:" + e.line() + ": "), e.getMessage());
    }
  }

  @Provide
  Arbitrary<List<TraceRequest>> traces() {
    Arbitrary<TraceRequest> one = Combinators.combine(
        Arbitraries.integers().between(1, 5000), Arbitraries.integers().between(1, 600),
        Arbitraries.integers().between(1, 1024), Arbitraries.strings().ofMinLength(1).ofMaxLength(12).injectNull(0.3),
        Arbitraries.doubles().between(0, 1e6)).as((input, output, block, session, gap) -> {
          int blocks = TraceRequest.blocksFor(input, block);
          List<Long> ids = new ArrayList<>();
          for (int i = 0; i < blocks; i++) {
            ids.add((long) (input * 31 + i));
          }
          return new TraceRequest(gap, session, session == null ? null : session + "-parent", input, output, block, ids);
        });
    return one.list().ofMaxSize(20).map(list -> {
      // arrivals must not decrease: accumulate the drawn values
      List<TraceRequest> ordered = new ArrayList<>();
      double t = 0;
      for (TraceRequest r : list) {
        t += r.arrivalMs();
        ordered.add(r.withArrivalMs(t));
      }
      return ordered;
    });
  }

  @Provide
  Arbitrary<String> mangled() {
    String good = "{\"arrival_ms\":1,\"session_id\":\"s\",\"input_length\":16,\"output_length\":1,\"block_size\":16,\"hash_ids\":[4]}";
    return Combinators.combine(Arbitraries.integers().between(0, good.length() - 1),
        Arbitraries.integers().between(0, 8), Arbitraries.chars().ascii())
        .as((at, cut, c) -> good + "\n" + good.substring(0, at) + c + good.substring(Math.min(good.length(), at + cut)) + "\n");
  }
}
