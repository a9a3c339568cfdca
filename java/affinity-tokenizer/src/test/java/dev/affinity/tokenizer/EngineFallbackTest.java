package dev.affinity.tokenizer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A template the engine renders for some conversations and not for others (here Python's {@code %} formatting, which
 * jinjava lacks, in a branch the load-time trial render does not take): the frontend routes such a chat on its text
 * instead of refusing it (the worker renders it), while a simulated worker, which must produce ids, answers 500.
 */
class EngineFallbackTest {
  private static final ProtocolCodec CODEC = new ProtocolCodec();

  private static ChatCompletionRequest chat(String messages) {
    return CODEC.parseChatCompletionRequest(("{\"model\": \"m\", \"messages\": " + messages + "}")
        .getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void aChatTheEngineCannotRenderIsRoutedOnItsText(@TempDir Path dir) throws Exception {
    Files.copy(TestModels.dir(TestModels.QWEN3).resolve("tokenizer.json"), dir.resolve("tokenizer.json"));
    Files.writeString(dir.resolve("tokenizer_config.json"), "{\"chat_template\": "
        + "\"{% if messages|length > 1 %}{{ '%d turns' % (messages|length) }}{% endif %}{{ messages[-1].content }}\"}");
    try (ModelTokenizer tokenizer = ModelTokenizer.load(dir)) {
      ModelPromptTokenizer frontend = new ModelPromptTokenizer(new PromptRenderer(tokenizer), () -> true);
      assertNotNull(frontend.tokenize(chat("[{\"role\": \"user\", \"content\": \"one\"}]")), "rendered");
      ChatCompletionRequest two = chat("[{\"role\": \"user\", \"content\": \"one\"}, {\"role\": \"user\", \"content\": \"two\"}]");
      assertNull(frontend.tokenize(two), "not rendered: routed on its text");
      assertEquals(1, frontend.engineErrors());
      ProtocolException worker = assertThrows(ProtocolException.class, () -> new HfTokenCodec(tokenizer).encodeChat(two));
      assertEquals(500, worker.status());
      assertTrue(worker.getMessage().contains("cannot render at template line 1"), worker.getMessage());
      assertFalse(worker.getMessage().isBlank());
    }
  }
}
