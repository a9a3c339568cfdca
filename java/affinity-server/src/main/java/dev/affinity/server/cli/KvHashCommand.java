package dev.affinity.server.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.kv.BlockHasher;
import dev.affinity.kv.HashAlgorithm;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * Computes TensorRT-LLM KV block hashes for debugging routing: one JSON array of token ids per
 * input line, one JSON array of block hashes per output line (router rules: last token excluded,
 * partial last block hashed). Bad lines are reported on stderr with their line number; the good
 * lines are still answered, and the exit status is 1.
 */
@Command(
    name = "kv-hash",
    mixinStandardHelpOptions = true,
    description = {
      "Compute KV block hashes as TensorRT-LLM's router does.",
      "Reads one JSON array of token ids per line on stdin; prints one JSON array of block hashes per line",
      "(v1_block_key and v2_sha256_64 as unsigned decimal numbers, v2_sha256 as hex strings)."
    })
final class KvHashCommand implements Callable<Integer> {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Spec
  CommandSpec spec;

  @Option(names = "--algo", required = true, converter = AlgoConverter.class,
      description = "v1_block_key, v2_sha256 or v2_sha256_64.")
  HashAlgorithm algorithm;

  @Option(names = "--tokens-per-block", required = true, description = "Block size in tokens.")
  int tokensPerBlock;

  @Option(names = "--cache-salt", description = "Cache salt (an empty string is a salt, distinct from none).")
  String cacheSalt;

  InputStream in = System.in;

  static final class AlgoConverter implements ITypeConverter<HashAlgorithm> {
    @Override
    public HashAlgorithm convert(String value) {
      return HashAlgorithm.fromWireName(value);
    }
  }

  @Override
  public Integer call() throws IOException {
    if (tokensPerBlock <= 0) {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(),
          "--tokens-per-block must be > 0, got " + tokensPerBlock);
    }
    BlockHasher hasher = new BlockHasher(algorithm, tokensPerBlock);
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    int bad = 0;
    int lineNo = 0;
    BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
    for (String line; (line = r.readLine()) != null; ) {
      lineNo++;
      if (line.isBlank()) {
        continue;
      }
      int[] tokens;
      try {
        tokens = parseTokens(line);
      } catch (IllegalArgumentException e) {
        bad++;
        err.println("line " + lineNo + ": " + e.getMessage());
        continue;
      }
      String[] hashes = hasher.wireHashes(tokens, cacheSalt);
      StringBuilder sb = new StringBuilder("[");
      for (int i = 0; i < hashes.length; i++) {
        sb.append(i == 0 ? "" : ",");
        if (algorithm == HashAlgorithm.V2_SHA256) {
          sb.append('"').append(hashes[i]).append('"');
        } else {
          sb.append(hashes[i]);
        }
      }
      out.println(sb.append(']'));
      out.flush();
    }
    return bad == 0 ? 0 : 1;
  }

  static int[] parseTokens(String line) {
    JsonNode node;
    try {
      node = JSON.readTree(line);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalArgumentException("not JSON: " + e.getOriginalMessage());
    }
    if (node == null || !node.isArray()) {
      throw new IllegalArgumentException("expected a JSON array of token ids, found " + (node == null ? "nothing" : node.getNodeType().toString().toLowerCase()));
    }
    int[] tokens = new int[node.size()];
    for (int i = 0; i < tokens.length; i++) {
      JsonNode t = node.get(i);
      if (!t.isIntegralNumber() || !t.canConvertToLong() || t.asLong() < 0 || t.asLong() > 0xFFFFFFFFL) {
        throw new IllegalArgumentException("element " + i + " is not a token id (an integer in [0, 2^32)): " + t);
      }
      tokens[i] = (int) t.asLong();
    }
    return tokens;
  }
}
