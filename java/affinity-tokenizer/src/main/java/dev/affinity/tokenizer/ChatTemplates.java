package dev.affinity.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A model's chat templates: one, or several named ones ({@code chat_template} as a list of {@code {name, template}});
 * as Hugging Face's {@code get_chat_template} chooses, {@code tool_use} when the request has tools and the model has
 * it, else {@code default}. Read as {@code from_pretrained} reads them: {@code chat_template.jinja} in the directory,
 * else {@code chat_template.json}, else {@code tokenizer_config.json}'s {@code chat_template}.
 */
public final class ChatTemplates {
  private final Map<String, ChatTemplate> byName;

  private ChatTemplates(Map<String, ChatTemplate> byName) {
    this.byName = byName;
  }

  /** One template under the name {@code default}. */
  public static ChatTemplates of(ChatTemplate template) {
    return new ChatTemplates(Map.of("default", template));
  }

  /** The templates of a tokenizer directory, or null when it has none. */
  static ChatTemplates read(Path dir, JsonNode tokenizerConfig, Map<String, String> specialTokens) throws IOException {
    Path jinja = dir.resolve("chat_template.jinja");
    if (Files.isRegularFile(jinja)) {
      return of(ChatTemplate.compile(Files.readString(jinja, StandardCharsets.UTF_8), jinja.toString(), specialTokens));
    }
    Path json = dir.resolve("chat_template.json");
    if (Files.isRegularFile(json)) {
      JsonNode node = new ObjectMapper().readTree(json.toFile()).get("chat_template");
      return from(node, json.toString(), specialTokens);
    }
    if (tokenizerConfig == null) {
      return null;
    }
    return from(tokenizerConfig.get("chat_template"), dir.resolve("tokenizer_config.json").toString(), specialTokens);
  }

  private static ChatTemplates from(JsonNode node, String origin, Map<String, String> specialTokens) {
    if (node == null || node.isNull()) {
      return null;
    }
    if (node.isTextual()) {
      return of(ChatTemplate.compile(node.asText(), origin, specialTokens));
    }
    if (!node.isArray()) {
      throw new IllegalArgumentException(origin + ": chat_template must be a string or a list of {name, template}");
    }
    Map<String, ChatTemplate> named = new LinkedHashMap<>();
    for (JsonNode entry : node) {
      String name = entry.path("name").asText(null);
      String template = entry.path("template").asText(null);
      if (name == null || template == null) {
        throw new IllegalArgumentException(origin + ": each chat_template entry needs a name and a template");
      }
      named.put(name, ChatTemplate.compile(template, origin + " (template " + name + ")", specialTokens));
    }
    return new ChatTemplates(Map.copyOf(named));
  }

  /** Every template's source, in name order (what a render fingerprint hashes). */
  public String sources() {
    StringBuilder out = new StringBuilder();
    new java.util.TreeMap<>(byName).forEach((name, t) -> out.append(name).append('\0').append(t.source()).append('\0'));
    return out.toString();
  }

  /** The template a conversation renders with. */
  public ChatTemplate forInput(ChatInput input) {
    ChatTemplate t = input.tools() != null ? byName.get("tool_use") : null;
    if (t == null) {
      t = byName.get("default");
    }
    if (t == null) {
      throw new TemplateException("the model has no default chat template (it has " + byName.keySet() + ")", false);
    }
    return t;
  }
}
