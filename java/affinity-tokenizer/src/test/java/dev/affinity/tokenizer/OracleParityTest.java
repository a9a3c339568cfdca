package dev.affinity.tokenizer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The Java tokenizer and chat template against Hugging Face's JavaScript implementations ({@link Oracle}) on a corpus
 * of chats (system prompts, multi-turn, tools, tool calls and results, reasoning, CJK, emoji, code with tabs, long
 * whitespace runs, special-token text) and of plain prompts, for four model families: the rendered text and the ids
 * must be equal, and a conversation one refuses the other refuses.
 */
class OracleParityTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @ParameterizedTest
  @ValueSource(strings = {TestModels.QWEN3, TestModels.LLAMA3, TestModels.DEEPSEEK_V3, TestModels.GEMMA3})
  void chatsRenderAndEncodeAsTheOracle(String family) throws Exception {
    var dir = TestModels.dir(family);
    List<JsonNode> cases = corpus();
    List<ObjectNode> requests = new ArrayList<>();
    for (JsonNode c : cases) {
      ObjectNode r = ((ObjectNode) c.deepCopy()).put("dir", dir.toString());
      r.remove("name");
      r.put("add_generation_prompt", input(c).addGenerationPrompt());
      requests.add(r);
    }
    List<JsonNode> expected = Oracle.run(requests);
    int rendered = 0;
    try (ModelTokenizer tokenizer = ModelTokenizer.load(dir)) {
      for (int i = 0; i < cases.size(); i++) {
        JsonNode c = cases.get(i);
        String name = family + " / " + c.get("name").asText();
        JsonNode want = expected.get(i);
        ChatInput input = input(c);
        if (want.has("error")) {
          TemplateException e = org.junit.jupiter.api.Assertions.assertThrows(TemplateException.class,
              () -> tokenizer.renderChat(input), name + ": the oracle refused it (" + want.get("error").asText() + ")");
          assertTrue(e.raisedByTemplate(), name + ": " + e.getMessage());
          continue;
        }
        String text = tokenizer.renderChat(input);
        assertEquals(want.get("text").asText(), text, name + ": rendered text");
        assertArrayEquals(ids(want.get("ids")), tokenizer.encodeChat(input), name + ": ids");
        assertArrayEquals(tokenizer.encode(text, false), tokenizer.encodeRendered(text), name + ": segment cache");
        rendered++;
      }
    }
    assertTrue(rendered >= cases.size() - 3, family + ": most of the corpus renders (" + rendered + ")");
  }

  @ParameterizedTest
  @ValueSource(strings = {TestModels.QWEN3, TestModels.LLAMA3, TestModels.DEEPSEEK_V3, TestModels.GEMMA3})
  void promptsEncodeAsTheOracle(String family) throws Exception {
    var dir = TestModels.dir(family);
    List<String> prompts;
    try (InputStream in = getClass().getResourceAsStream("/prompt-corpus.json")) {
      prompts = JSON.readValue(in, new TypeReference<List<String>>() {});
    }
    List<ObjectNode> requests = new ArrayList<>();
    for (String p : prompts) {
      requests.add(JSON.createObjectNode().put("dir", dir.toString()).put("prompt", p));
    }
    List<JsonNode> expected = Oracle.run(requests);
    try (ModelTokenizer tokenizer = ModelTokenizer.load(dir)) {
      for (int i = 0; i < prompts.size(); i++) {
        assertArrayEquals(ids(expected.get(i).get("ids")), tokenizer.encode(prompts.get(i), false),
            family + " / prompt " + JSON.writeValueAsString(prompts.get(i)));
      }
    }
  }

  static List<JsonNode> corpus() throws IOException {
    List<JsonNode> out = new ArrayList<>();
    try (InputStream in = OracleParityTest.class.getResourceAsStream("/chat-corpus.jsonl")) {
      for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
        if (!line.isBlank()) {
          out.add(JSON.readTree(line));
        }
      }
    }
    return out;
  }

  @SuppressWarnings("unchecked")
  static ChatInput input(JsonNode c) {
    List<Map<String, Object>> messages = JSON.convertValue(c.get("messages"), List.class);
    List<Object> tools = c.has("tools") ? JSON.convertValue(c.get("tools"), List.class) : null;
    Map<String, Object> kwargs = c.has("chat_template_kwargs") ? JSON.convertValue(c.get("chat_template_kwargs"), Map.class)
        : Map.of();
    boolean generation = !c.has("add_generation_prompt") || c.get("add_generation_prompt").asBoolean();
    return new ChatInput(messages, tools, generation, kwargs);
  }

  static int[] ids(JsonNode array) {
    int[] out = new int[array.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = array.get(i).asInt();
    }
    return out;
  }
}
