package dev.affinity.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Hugging Face's own JavaScript tokenizer and Jinja engine ({@code @huggingface/tokenizers}, {@code @huggingface/jinja},
 * installed with the test models), run by {@code scripts/oracle/tokenizer-oracle.mjs}: the independent oracle the
 * Java ids and rendered text are compared with.
 */
final class Oracle {
  private static final ObjectMapper JSON = new ObjectMapper();

  private Oracle() {}

  /** Sends each request (one JSON object a line) and returns the oracle's answers, in order. */
  static List<JsonNode> run(List<ObjectNode> requests) throws IOException, InterruptedException {
    Path root = TestModels.root();
    Path script = Path.of(System.getProperty("affinity.root", "../..")).resolve("scripts/oracle/tokenizer-oracle.mjs");
    if (!Files.isRegularFile(script)) {
      throw new IllegalStateException(script.toAbsolutePath() + " not found");
    }
    // ESM resolves packages from the script's folder upwards: run a copy beside the models' node_modules
    Path work = Files.createTempDirectory("affinity-oracle");
    Files.copy(script, work.resolve("oracle.mjs"));
    Files.createSymbolicLink(work.resolve("node_modules"), root.resolve("node_modules").toAbsolutePath());
    Process p = new ProcessBuilder("node", work.resolve("oracle.mjs").toString()).redirectErrorStream(false).start();
    List<JsonNode> out = new ArrayList<>();
    Thread writer = new Thread(() -> {
      try (BufferedWriter w = new BufferedWriter(new OutputStreamWriter(p.getOutputStream(), StandardCharsets.UTF_8))) {
        for (ObjectNode r : requests) {
          w.write(JSON.writeValueAsString(r));
          w.write('\n');
        }
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    });
    writer.start();
    try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      for (String line; (line = r.readLine()) != null; ) {
        out.add(JSON.readTree(line));
      }
    }
    writer.join();
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0 || out.size() != requests.size()) {
      String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
      throw new IllegalStateException("oracle failed (" + out.size() + " of " + requests.size() + " answers): " + err);
    }
    Files.delete(work.resolve("node_modules"));
    Files.delete(work.resolve("oracle.mjs"));
    Files.delete(work);
    return out;
  }
}
