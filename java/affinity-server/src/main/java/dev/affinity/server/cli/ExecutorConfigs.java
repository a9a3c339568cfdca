package dev.affinity.server.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import picocli.CommandLine.ParameterException;

/** Reads executor configurations given on the command line as JSON text or {@code @FILE}. */
final class ExecutorConfigs {
  private static final ObjectMapper JSON = new ObjectMapper();

  private ExecutorConfigs() {}

  /** The JSON text of an option value ("" when absent). */
  static String read(String value) throws IOException {
    if (value == null || value.isBlank()) {
      return "";
    }
    if (value.startsWith("@")) {
      return Files.readString(Path.of(value.substring(1)), StandardCharsets.UTF_8);
    }
    return value;
  }

  /** The configuration with its clock forced to virtual time (the native layer validates the rest). */
  static String withVirtualClock(String json) {
    try {
      JsonNode node = json.isBlank() ? JSON.createObjectNode() : JSON.readTree(json);
      if (!(node instanceof ObjectNode obj)) {
        throw new IllegalArgumentException("executor config must be a JSON object, found " + node.getNodeType());
      }
      ObjectNode clock = obj.has("clock") && obj.get("clock").isObject()
          ? (ObjectNode) obj.get("clock") : obj.putObject("clock");
      clock.put("mode", "virtual");
      return JSON.writeValueAsString(obj);
    } catch (IOException e) {
      throw new IllegalArgumentException("executor config is not valid JSON: " + e.getMessage(), e);
    }
  }

  static ParameterException bad(picocli.CommandLine cmd, String message) {
    return new ParameterException(cmd, message);
  }
}
