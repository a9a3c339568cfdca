package dev.affinity.bench.trace;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.bench.trace.ClaudeCodeTrace.Agent;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * Reads Claude Code session traces: every {@code *.json} file of a directory (in file-name order), each
 * one session in the format of {@code callanjfox/kv-cache-tester}'s {@code traces/} (docs/traces.md).
 * Fields a model call may lack ({@code api_time}, {@code think_time}) are NaN, a missing or empty {@code stop} null; fields
 * routing does not use ({@code model}, {@code input_types}, ...) are ignored. A bad file fails with its name and the JSON
 * path of the problem, e.g. {@code trace_0003.json: requests[4].hash_ids[2] must be an integer >= 0}.
 */
public final class ClaudeCodeTraceReader {
  private static final ObjectMapper MAPPER = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  private ClaudeCodeTraceReader() {}

  /** The {@code *.json} files of {@code dir}, sorted by name; an error when there are none. */
  public static List<Path> files(Path dir) throws IOException {
    if (!Files.isDirectory(dir)) {
      throw new IOException("no such directory: " + dir);
    }
    List<Path> files;
    try (Stream<Path> s = Files.list(dir)) {
      files = s.filter(p -> p.getFileName().toString().endsWith(".json") && Files.isRegularFile(p)).sorted().toList();
    }
    if (files.isEmpty()) {
      throw new IOException("no *.json trace files in " + dir);
    }
    return files;
  }

  /** Reads every trace of a directory. */
  public static List<ClaudeCodeTrace> readDirectory(Path dir) throws IOException {
    List<ClaudeCodeTrace> traces = new ArrayList<>();
    for (Path f : files(dir)) {
      traces.add(read(f));
    }
    return traces;
  }

  /** Reads one trace file. */
  public static ClaudeCodeTrace read(Path file) throws IOException {
    return parse(Files.readString(file), file.getFileName().toString());
  }

  /** Parses one trace; {@code source} names it in errors. */
  public static ClaudeCodeTrace parse(String json, String source) {
    JsonNode root;
    try {
      root = MAPPER.readTree(json);
    } catch (JsonProcessingException e) {
      throw new TraceFormatException(source, "malformed JSON at line " + e.getLocation().getLineNr() + ", column "
          + e.getLocation().getColumnNr() + ": " + e.getOriginalMessage());
    }
    Fields top = new Fields(source, "", root);
    int blockSize = (int) top.requiredLong("block_size", 1, Integer.MAX_VALUE);
    String id = top.optionalString("id", source.replaceFirst("\\.json$", ""));
    Agent main = agent(top, "main", "main", blockSize);
    return new ClaudeCodeTrace(id, source, blockSize, main);
  }

  private static Agent agent(Fields f, String agentId, String kind, int blockSize) {
    int system = (int) f.optionalLong("system_tokens", 0, Integer.MAX_VALUE, 0);
    int tools = (int) f.optionalLong("tool_tokens", 0, Integer.MAX_VALUE, 0);
    JsonNode requests = f.node.get("requests");
    if (requests == null || !requests.isArray()) {
      throw f.error("requests", "must be an array");
    }
    List<ClaudeCodeTrace.Entry> entries = new ArrayList<>(requests.size());
    for (int i = 0; i < requests.size(); i++) {
      Fields r = f.child("requests[" + i + "]", requests.get(i));
      if ("subagent".equals(r.optionalString("type", ""))) {
        double t = r.optionalDouble("t", 0);
        String subId = r.optionalString("agent_id", "subagent-" + i);
        String subKind = r.optionalString("subagent_type", "subagent");
        entries.add(new ClaudeCodeTrace.SubAgent(t, agent(r, subId, subKind, blockSize)));
      } else {
        entries.add(call(r, blockSize));
      }
    }
    return new Agent(agentId, kind, system, tools, entries);
  }

  private static ClaudeCodeTrace.Call call(Fields r, int blockSize) {
    double t = r.requiredDouble("t");
    int in = (int) r.requiredLong("in", 1, Integer.MAX_VALUE);
    int out = (int) r.requiredLong("out", 0, Integer.MAX_VALUE);
    JsonNode ids = r.node.get("hash_ids");
    if (ids == null || !ids.isArray()) {
      throw r.error("hash_ids", "must be an array of integers");
    }
    int maxIds = TraceRequest.blocksFor(in, blockSize);
    if (ids.size() > maxIds) {
      throw r.error("hash_ids", "has " + ids.size() + " ids but in " + in + " spans only ceil(" + in + " / " + blockSize
          + ") = " + maxIds + " blocks");
    }
    long[] hashIds = new long[ids.size()];
    for (int k = 0; k < hashIds.length; k++) {
      JsonNode n = ids.get(k);
      if (!n.isIntegralNumber() || !n.canConvertToLong() || n.longValue() < 0 || n.longValue() > 0xFFFF_FFFFL) {
        throw r.error("hash_ids[" + k + "]", "must be an integer in [0, 2^32), found " + n);
      }
      hashIds[k] = n.longValue();
    }
    double api = r.optionalDouble("api_time", Double.NaN);
    double think = r.optionalDouble("think_time", Double.NaN);
    String stop = r.optionalString("stop", "");  // an empty stop (217 calls of the traces) says nothing either
    return new ClaudeCodeTrace.Call(t, in, out, hashIds, api, think, stop.isEmpty() ? null : stop);
  }

  /** The fields of one JSON object, with errors naming the file and the JSON path. */
  private record Fields(String source, String path, JsonNode node) {
    Fields {
      if (node == null || !node.isObject()) {
        throw new TraceFormatException(source, (path.isEmpty() ? "the top level" : path) + " must be a JSON object");
      }
    }

    Fields child(String name, JsonNode n) {
      return new Fields(source, path.isEmpty() ? name : path + "." + name, n);
    }

    TraceFormatException error(String field, String problem) {
      return new TraceFormatException(source, (path.isEmpty() ? "" : path + ".") + field + " " + problem);
    }

    long requiredLong(String field, long min, long max) {
      JsonNode n = node.get(field);
      if (n == null || n.isNull()) {
        throw error(field, "is missing");
      }
      return checkLong(field, n, min, max);
    }

    long optionalLong(String field, long min, long max, long absent) {
      JsonNode n = node.get(field);
      return n == null || n.isNull() ? absent : checkLong(field, n, min, max);
    }

    private long checkLong(String field, JsonNode n, long min, long max) {
      if (!n.isIntegralNumber() || !n.canConvertToLong() || n.longValue() < min || n.longValue() > max) {
        throw error(field, "must be an integer in [" + min + ", " + max + "], found " + n);
      }
      return n.longValue();
    }

    double requiredDouble(String field) {
      JsonNode n = node.get(field);
      if (n == null || n.isNull()) {
        throw error(field, "is missing");
      }
      return checkDouble(field, n);
    }

    double optionalDouble(String field, double absent) {
      JsonNode n = node.get(field);
      return n == null || n.isNull() ? absent : checkDouble(field, n);
    }

    private double checkDouble(String field, JsonNode n) {
      if (!n.isNumber() || !Double.isFinite(n.doubleValue()) || n.doubleValue() < 0) {
        throw error(field, "must be a number >= 0, found " + n);
      }
      return n.doubleValue();
    }

    String optionalString(String field, String absent) {
      JsonNode n = node.get(field);
      if (n == null || n.isNull()) {
        return absent;
      }
      if (!n.isTextual()) {
        throw error(field, "must be a string, found " + n);
      }
      return n.asText();
    }
  }
}
