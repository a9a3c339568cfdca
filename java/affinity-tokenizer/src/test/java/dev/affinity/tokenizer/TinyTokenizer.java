package dev.affinity.tokenizer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A tokenizer directory small enough to write in a test: a WordLevel {@code tokenizer.json} (whitespace
 * pre-tokenizer, {@code <s>} added in front by its post-processor) and a {@code tokenizer_config.json} with the chat
 * template the test gives.
 */
final class TinyTokenizer {
  /** Ids: {@code <s>} 0, {@code </s>} 1, {@code [UNK]} 2, hello 3, world 4, user 5, assistant 6, {@code :} 7. */
  static final String TOKENIZER_JSON = """
      {"version": "1.0", "truncation": null, "padding": null,
       "added_tokens": [
         {"id": 0, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
         {"id": 1, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}],
       "normalizer": null, "pre_tokenizer": {"type": "Whitespace"},
       "post_processor": {"type": "TemplateProcessing",
         "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
         "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
         "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]}}},
       "decoder": null,
       "model": {"type": "WordLevel", "unk_token": "[UNK]",
         "vocab": {"<s>": 0, "</s>": 1, "[UNK]": 2, "hello": 3, "world": 4, "user": 5, "assistant": 6, ":": 7}}}
      """;

  private TinyTokenizer() {}

  /** A directory under {@code parent} with the tiny tokenizer.json and, unless null, this tokenizer_config.json. */
  static Path dir(Path parent, String name, String tokenizerConfigJson) {
    try {
      Path dir = Files.createDirectories(parent.resolve(name));
      Files.writeString(dir.resolve("tokenizer.json"), TOKENIZER_JSON, StandardCharsets.UTF_8);
      if (tokenizerConfigJson != null) {
        Files.writeString(dir.resolve("tokenizer_config.json"), tokenizerConfigJson, StandardCharsets.UTF_8);
      }
      return dir;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A tokenizer_config.json with {@code <s>}/{@code </s>} and this chat template (a JSON string or list). */
  static String config(String chatTemplateJson) {
    return "{\"bos_token\": \"<s>\", \"eos_token\": {\"content\": \"</s>\", \"special\": true}"
        + (chatTemplateJson == null ? "" : ", \"chat_template\": " + chatTemplateJson) + "}";
  }

  /** A JSON string literal. */
  static String quote(String s) {
    StringBuilder out = new StringBuilder();
    dev.affinity.protocol.PythonJsonDumps.writeString(out, s, false);
    return out.toString();
  }
}
