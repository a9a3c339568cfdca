package dev.affinity.bench.trace;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads the Mooncake FAST'25 trace format: one JSON object per line with {@code timestamp}
 * (milliseconds), {@code input_length}, {@code output_length} and {@code hash_ids} (prefix-chained
 * ids of 512-token blocks). Other fields, present in some of Mooncake's traces, are ignored.
 *
 * <p>The traces quantize arrivals into steps of about 3 s, with about ten requests on each step.
 * Replayed as is, those ties would dominate ordering, so the reader spreads the {@code k} requests
 * of a step evenly over it, in file order: request {@code j} arrives at
 * {@code t + j * step / k}, where {@code step} is the gap to the next distinct timestamp (for the
 * last step, the gap before it). Timestamps must not decrease.
 */
public final class MooncakeTraceReader {
  /** Tokens per block in the Mooncake traces. */
  public static final int BLOCK_SIZE = 512;

  private MooncakeTraceReader() {}

  /** Reads a whole trace file. */
  public static List<TraceRequest> read(Path file) throws IOException {
    try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      return read(in, file.toString());
    }
  }

  /** Reads a trace; {@code source} names it in errors. */
  public static List<TraceRequest> read(BufferedReader in, String source) throws IOException {
    JsonLines json = new JsonLines(source);
    List<JsonLines.Line> lines = json.readAll(in);
    long[] timestamps = new long[lines.size()];
    List<TraceRequest> requests = new ArrayList<>(lines.size());
    for (int i = 0; i < lines.size(); i++) {
      json.at(lines.get(i));
      long ts = json.requiredLong("timestamp", 0);
      if (i > 0 && ts < timestamps[i - 1]) {
        throw json.error("timestamp " + ts + " is earlier than the previous line's " + timestamps[i - 1]);
      }
      timestamps[i] = ts;
      int input = json.requiredInt("input_length", 1);
      int output = json.requiredInt("output_length", 1);
      List<Long> ids = json.requiredLongArray("hash_ids", 0);
      requests.add(json.build(() -> new TraceRequest(ts, null, null, input, output, BLOCK_SIZE, ids)));
    }
    return spreadArrivals(requests, timestamps);
  }

  private static List<TraceRequest> spreadArrivals(List<TraceRequest> requests, long[] timestamps) {
    List<TraceRequest> spread = new ArrayList<>(requests.size());
    long previousStep = 0;
    int start = 0;
    while (start < requests.size()) {
      int end = start;
      while (end < requests.size() && timestamps[end] == timestamps[start]) {
        end++;
      }
      long step = end < requests.size() ? timestamps[end] - timestamps[start] : previousStep;
      int k = end - start;
      for (int j = 0; j < k; j++) {
        spread.add(requests.get(start + j).withArrivalMs(timestamps[start] + (double) step * j / k));
      }
      previousStep = step;
      start = end;
    }
    return spread;
  }
}
