package dev.affinity.server.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import dev.affinity.tokenizer.TestModels;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class TokenizeCommandTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String CHAT = "{\"messages\":[{\"role\":\"system\",\"content\":\"You are helpful.\"},"
      + "{\"role\":\"user\",\"content\":\"Hi\"}],\"add_generation_prompt\":true}";
  private static final String CHAT_TEXT =
      "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";

  private record Result(int code, String out, String err) {
    List<String> lines() {
      return out.lines().toList();
    }
  }

  private static Result run(String stdin, String... args) {
    TokenizeCommand cmd = new TokenizeCommand();
    cmd.in = new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8));
    CommandLine cl = new CommandLine(cmd);
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    cl.setOut(new PrintWriter(out));
    cl.setErr(new PrintWriter(err));
    int code = cl.execute(args);
    return new Result(code, out.toString(), err.toString());
  }

  /** Qwen3's tokenizer directory ({@link TestModels}). */
  private static Path qwen3() {
    return TestModels.dir(TestModels.QWEN3);
  }

  private static Result tokenize(String stdin, String... extra) {
    String[] args = new String[extra.length + 2];
    args[0] = "--tokenizer";
    args[1] = qwen3().toString();
    System.arraycopy(extra, 0, args, 2, extra.length);
    return run(stdin, args);
  }

  private static JsonNode json(String line) {
    try {
      return JSON.readTree(line);
    } catch (IOException e) {
      throw new AssertionError(line, e);
    }
  }

  /** Asserts that {@code line} is one error line naming {@code param} (null: none) and returns its message. */
  private static String assertError(String line, String param) {
    JsonNode root = json(line);
    assertEquals(1, root.size(), line);
    JsonNode error = root.get("error");
    assertTrue(error != null && error.isObject(), line);
    assertTrue(error.get("message").isTextual() && !error.get("message").asText().isEmpty(), line);
    assertTrue(error.has("param"), line);
    if (param == null) {
      assertTrue(error.get("param").isNull(), line);
    } else {
      assertEquals(param, error.get("param").asText(), line);
    }
    return error.get("message").asText();
  }

  @Test
  void encodesAPromptWithoutSpecialTokens() {
    Result r = tokenize("{\"prompt\": \"Hello world\"}\n");
    assertEquals(0, r.code(), r.err());
    assertEquals(List.of("[9707,1879]"), r.lines());
  }

  @Test
  void rendersAndEncodesAChat() {
    Result text = tokenize(CHAT + "\n", "--text");
    assertEquals(0, text.code(), text.err());
    assertEquals(1, text.lines().size(), text.out());
    assertEquals(CHAT_TEXT, json(text.lines().get(0)).asText());

    Result ids = tokenize(CHAT + "\n");
    assertEquals(0, ids.code(), ids.err());
    // <|im_start|> system \n You are helpful . <|im_end|> \n <|im_start|> user \n Hi <|im_end|> \n <|im_start|> assistant \n:
    // the special tokens are single ids, and none is added in front
    assertEquals(List.of("[151644,8948,198,2610,525,10950,13,151645,198,151644,872,198,13048,151645,198,151644,77091,198]"),
        ids.lines());
    Result sameAsText = tokenize("{\"prompt\": " + JSON.valueToTree(CHAT_TEXT) + "}\n");
    assertEquals(ids.out(), sameAsText.out());
  }

  @Test
  void addGenerationPromptDefaultsToTrueAndCanBeTurnedOff() {
    String noPrompt = "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"add_generation_prompt\":false}";
    String byDefault = "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}";
    Result r = tokenize(noPrompt + "\n" + byDefault + "\n", "--text");
    assertEquals(List.of("\"<|im_start|>user\\nHi<|im_end|>\\n\"",
        "\"<|im_start|>user\\nHi<|im_end|>\\n<|im_start|>assistant\\n\""), r.lines());
  }

  @Test
  void passesToolsAndTemplateKwargs() {
    String line = "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],"
        + "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\"}}}],"
        + "\"chat_template_kwargs\":{\"enable_thinking\":false}}";
    String rendered = json(tokenize(line + "\n", "--text").lines().get(0)).asText();
    assertTrue(rendered.contains("<tools>") && rendered.contains("\"name\": \"get_weather\""), rendered);
    assertTrue(rendered.endsWith("<|im_start|>assistant\n<think>\n\n</think>\n\n"), rendered);
  }

  @Test
  void textOfAPromptIsThePromptItself() {
    Result r = tokenize("{\"prompt\": \"Hello world\"}\n{\"prompt\": \"caf\u00e9 \u2603\"}\n", "--text");
    assertEquals(0, r.code(), r.err());
    assertEquals(List.of("\"Hello world\"", "\"caf\\u00E9 \\u2603\""), r.lines());  // ASCII-only JSON
    assertEquals("caf\u00e9 \u2603", json(r.lines().get(1)).asText());
  }

  @Test
  void eachBadLineIsAnsweredWithOneErrorAndTheNextLinesGoOn() {
    String good = "{\"prompt\": \"Hello world\"}";
    String[][] cases = {
      {"not json", null},
      {"{\"prompt\": ", null},
      {"[1, 2]", null},
      {"\"Hello\"", null},
      {"{}", "messages"},
      {"{\"text\": \"Hello\"}", "messages"},
      {"{\"prompt\": 3}", "prompt"},
      {"{\"prompt\": [\"a\"]}", "prompt"},
      {"{\"prompt\": \"a\", \"messages\": []}", "prompt"},
      {"{\"messages\": 3}", "messages"},
      {"{\"messages\": []}", "messages"},
      {"{\"messages\": [{\"content\": \"Hi\"}]}", "messages[0].role"},
      {"{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"add_generation_prompt\": \"yes\"}",
          "add_generation_prompt"},
      {"{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"tools\": {}}", "tools"},
      {"{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"chat_template_kwargs\": []}",
          "chat_template_kwargs"},
    };
    StringBuilder in = new StringBuilder();
    for (String[] c : cases) {
      in.append(c[0]).append('\n').append(good).append('\n');
    }
    Result r = tokenize(in.toString());
    assertEquals(0, r.code(), r.err());
    assertEquals(2 * cases.length, r.lines().size(), r.out());
    for (int i = 0; i < cases.length; i++) {
      assertError(r.lines().get(2 * i), cases[i][1]);
      assertEquals("[9707,1879]", r.lines().get(2 * i + 1), cases[i][0]);
    }
  }

  @Test
  void aTemplateThatRaisesIsAnErrorOnMessages(@TempDir Path dir) throws IOException {
    Files.copy(qwen3().resolve("tokenizer.json"), dir.resolve("tokenizer.json"));
    String template = "{%- if messages[0].role != 'user' %}{{ raise_exception('the first message must be the user\\'s') }}"
        + "{%- endif %}{%- for m in messages %}{{ m.role + ': ' + m.content + '\\n' }}{%- endfor %}";
    Files.writeString(dir.resolve("tokenizer_config.json"),
        JSON.createObjectNode().put("chat_template", template).toString());
    String refused = "{\"messages\":[{\"role\":\"assistant\",\"content\":\"Hi\"}]}";
    String accepted = "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}";
    Result r = run(refused + "\n" + accepted + "\n", "--tokenizer", dir.toString(), "--text");
    assertEquals(0, r.code(), r.err());
    assertEquals(2, r.lines().size(), r.out());
    String message = assertError(r.lines().get(0), "messages");
    assertTrue(message.contains("the first message must be the user's"), message);
    assertEquals("user: Hi\n", json(r.lines().get(1)).asText());
  }

  @Test
  void aModelWithoutAChatTemplateAnswersPromptsOnly(@TempDir Path dir) throws IOException {
    Files.copy(qwen3().resolve("tokenizer.json"), dir.resolve("tokenizer.json"));
    Result r = run(CHAT + "\n{\"prompt\": \"Hello world\"}\n", "--tokenizer", dir.toString());
    assertEquals(0, r.code(), r.err());
    assertTrue(assertError(r.lines().get(0), "messages").contains("no chat template"), r.out());
    assertEquals("[9707,1879]", r.lines().get(1));
  }

  @Test
  void emptyLinesAreSkipped() {
    Result r = tokenize("\n   \n{\"prompt\": \"Hello world\"}\n\n" + CHAT + "\n\n", "--text");
    assertEquals(0, r.code(), r.err());
    assertEquals(List.of("\"Hello world\"", JSON.valueToTree(CHAT_TEXT).toString()), r.lines());
    assertEquals("", tokenize("").out());
  }

  @Test
  void aBadTokenizerDirectoryIsAUsageError(@TempDir Path dir) throws IOException {
    Result missing = run("{\"prompt\": \"Hi\"}\n", "--tokenizer", dir.resolve("nope").toString());
    assertEquals(2, missing.code());
    assertEquals("", missing.out());
    assertTrue(missing.err().contains("--tokenizer: " + dir.resolve("nope") + " is not a directory"), missing.err());

    Result empty = run("{\"prompt\": \"Hi\"}\n", "--tokenizer", dir.toString());
    assertEquals(2, empty.code());
    assertTrue(empty.err().contains("tokenizer.json not found"), empty.err());

    Files.writeString(dir.resolve("tokenizer.json"), "{not json");
    Result broken = run("{\"prompt\": \"Hi\"}\n", "--tokenizer", dir.toString());
    assertEquals(2, broken.code());
    assertTrue(broken.err().contains("--tokenizer: cannot read"), broken.err());

    Result none = run("{\"prompt\": \"Hi\"}\n");
    assertEquals(2, none.code());
    assertTrue(none.err().contains("--tokenizer"), none.err());
  }

  @Test
  void isASubcommandOfAffinity() {
    StringWriter out = new StringWriter();
    CommandLine cl = AffinityCli.commandLine();
    cl.setOut(new PrintWriter(out));
    assertEquals(0, cl.execute("tokenize", "--help"));
    assertTrue(out.toString().contains("Usage: affinity tokenize"), out.toString());
  }
}
