package dev.affinity.protocol;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/** Chat completions' tool definitions, as the endpoints that convert to chat (Messages, Responses) write them. */
public final class ChatTools {
  private ChatTools() {}

  /**
   * Appends {@code {"type": "function", "function": {name, description, parameters, strict}}} to {@code tools}: the
   * name of {@code source}, its {@code description} and {@code strict} when they are text and a boolean, and
   * {@code parameters} (copied). The caller has checked the name.
   */
  public static void addFunction(ArrayNode tools, JsonNode source, JsonNode parameters) {
    ObjectNode fn = JsonNodeFactory.instance.objectNode();
    fn.put("name", source.get("name").asText());
    if (source.path("description").isTextual()) {
      fn.put("description", source.get("description").asText());
    }
    fn.set("parameters", parameters.deepCopy());
    if (source.path("strict").isBoolean()) {
      fn.put("strict", source.get("strict").asBoolean());
    }
    ObjectNode tool = tools.addObject();
    tool.put("type", "function");
    tool.set("function", fn);
  }
}
