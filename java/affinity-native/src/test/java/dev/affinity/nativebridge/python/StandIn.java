package dev.affinity.nativebridge.python;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.executor.Executor;
import dev.affinity.executor.ExecutorResponse;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The stand-in tensorrt_llm package of the tests (native/tests/python): configurations that load it
 * into the pytorch backend, and the calls it recorded. Tests that need it are skipped, with the
 * reason, where this build has no Python host library or the interpreter no shared libpython.
 */
public final class StandIn {
  private static final ObjectMapper JSON = new ObjectMapper();

  private StandIn() {}

  /** Skips the calling test unless the pytorch backend can run here. */
  public static void assumeAvailable() {
    PyTorchBackend.unavailability(null).ifPresent(why -> assumeTrue(false, why));
  }

  /** The directory holding the stand-in package. */
  public static String directory() {
    String dir = System.getProperty("affinity.test.standin");
    if (dir == null) {
      throw new IllegalStateException("system property affinity.test.standin is not set (see the module's pom)");
    }
    return dir;
  }

  /**
   * An executor configuration over the stand-in: two attention-DP ranks, 4 tokens per block, fast
   * polling; {@code options} go on the model name (e.g. "&delay_ms=20").
   */
  public static ObjectNode config(Path record, String options) {
    ObjectNode c = JSON.createObjectNode();
    c.putArray("python_path").add(directory());
    c.put("model", "standin?record=" + record + options);
    ObjectNode args = c.putObject("llm_args");
    args.put("tensor_parallel_size", 2).put("enable_attention_dp", true);
    args.putObject("kv_cache_config").put("tokens_per_block", 4);
    c.putObject("kv_events").put("poll_interval_ms", 5);
    c.put("stats_poll_interval_ms", 5);
    return c;
  }

  /** The recorded calls of one kind ("generate_async", "LLM", "abort", "shutdown"), in order. */
  public static List<JsonNode> calls(Path record, String kind) {
    List<JsonNode> out = new ArrayList<>();
    try {
      if (!Files.exists(record)) {
        return out;
      }
      for (String line : Files.readAllLines(record)) {
        JsonNode n = JSON.readTree(line);
        if (kind.equals(n.path("call").asText())) {
          out.add(n);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }

  /** Collects responses of {@code id} until its final one (20 s at most). */
  public static List<ExecutorResponse> until(Executor e, long id, List<ExecutorResponse> others) {
    List<ExecutorResponse> mine = new ArrayList<>();
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (System.nanoTime() < deadline) {
      for (ExecutorResponse r : e.awaitResponses(100, Duration.ofMillis(100))) {
        (r.requestId() == id ? mine : others).add(r);
        if (r.requestId() == id && r.isFinal()) {
          return mine;
        }
      }
    }
    throw new AssertionError("no final response for request " + id + " within 20 s; got " + mine);
  }
}
