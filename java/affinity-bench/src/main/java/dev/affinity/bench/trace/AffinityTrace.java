package dev.affinity.bench.trace;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Affinity's own trace format (JSON Lines, documented in docs/traces.md): one request per line,
 * in arrival order, with the fields
 * {@code arrival_ms, session_id?, parent_session_id?, input_length, output_length, block_size, hash_ids,
 * stop_reason?} (how the call ended: {@code tool_use} for a tool call, as the Claude Code traces record it).
 * Every reader of another format (the Mooncake reader, the agentic workload generator) produces
 * {@link TraceRequest}s that this class writes, and reads back unchanged. Unknown fields are errors,
 * so that a misspelt field is not silently ignored.
 */
public final class AffinityTrace {
  static final List<String> FIELDS = List.of(
      "arrival_ms", "session_id", "parent_session_id", "input_length", "output_length", "block_size", "hash_ids",
      "stop_reason");

  private static final JsonFactory JSON = new JsonFactory();

  private AffinityTrace() {}

  /** Writes {@code requests}, one line each. */
  public static void write(List<TraceRequest> requests, Writer out) throws IOException {
    for (TraceRequest r : requests) {
      try (JsonGenerator g = JSON.createGenerator(out)) {
        g.disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET);
        g.writeStartObject();
        g.writeNumberField("arrival_ms", r.arrivalMs());
        if (r.sessionId() != null) {
          g.writeStringField("session_id", r.sessionId());
        }
        if (r.parentSessionId() != null) {
          g.writeStringField("parent_session_id", r.parentSessionId());
        }
        g.writeNumberField("input_length", r.inputLength());
        g.writeNumberField("output_length", r.outputLength());
        g.writeNumberField("block_size", r.blockSize());
        g.writeArrayFieldStart("hash_ids");
        for (long id : r.hashIds()) {
          g.writeNumber(id);
        }
        g.writeEndArray();
        if (r.stopReason() != null) {
          g.writeStringField("stop_reason", r.stopReason());
        }
        g.writeEndObject();
      }
      out.write('\n');
    }
    out.flush();
  }

  /** Writes {@code requests} to {@code file}. */
  public static void write(List<TraceRequest> requests, Path file) throws IOException {
    try (Writer out = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
      write(requests, out);
    }
  }

  /** Reads a whole trace file. */
  public static List<TraceRequest> read(Path file) throws IOException {
    try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      return read(in, file.toString());
    }
  }

  /** Reads a trace; {@code source} names it in errors. Arrivals must not decrease. */
  public static List<TraceRequest> read(BufferedReader in, String source) throws IOException {
    JsonLines json = new JsonLines(source);
    List<TraceRequest> requests = new ArrayList<>();
    double previous = 0;
    for (JsonLines.Line line : json.readAll(in)) {
      json.at(line);
      json.rejectUnknown(FIELDS);
      double arrival = json.requiredDouble("arrival_ms", 0);
      if (arrival < previous) {
        throw json.error("arrival_ms " + arrival + " is earlier than the previous line's " + previous);
      }
      previous = arrival;
      String session = json.optionalString("session_id");
      String parent = json.optionalString("parent_session_id");
      int input = json.requiredInt("input_length", 1);
      int output = json.requiredInt("output_length", 1);
      int blockSize = json.requiredInt("block_size", 1);
      List<Long> ids = json.requiredLongArray("hash_ids", 0);
      String stop = json.optionalString("stop_reason");
      requests.add(json.build(() -> new TraceRequest(arrival, session, parent, input, output, blockSize, ids, stop)));
    }
    return requests;
  }
}
