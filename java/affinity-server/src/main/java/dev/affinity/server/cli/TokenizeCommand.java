package dev.affinity.server.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.tokenizer.ChatInput;
import dev.affinity.tokenizer.ModelTokenizer;
import dev.affinity.tokenizer.OpenAiChat;
import dev.affinity.tokenizer.TemplateException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * Tokenizes prompts with a model's Hugging Face tokenizer and chat template, for debugging routing and checking a
 * model's tokenizer: one JSON object per input line, either {@code {"prompt": "..."}} (encoded without added special
 * tokens) or an OpenAI chat body's {@code messages}, {@code tools}, {@code add_generation_prompt} and
 * {@code chat_template_kwargs} (rendered with the model's chat template, then encoded without added special tokens,
 * as {@code apply_chat_template(tokenize=True)}); one JSON array of token ids per output line, or with {@code --text}
 * the rendered text as a JSON string. A bad line is answered with one {@code {"error": {"message", "param"}}} line
 * naming the field, and the next lines are still answered; the exit status is 0 when the input ends. A tokenizer
 * directory that cannot be loaded is a usage error (exit status 2).
 */
@Command(
    name = "tokenize",
    mixinStandardHelpOptions = true,
    description = {
      "Tokenize prompts and chats with a model's tokenizer and chat template.",
      "Reads one JSON object per line on stdin, either {\"prompt\": \"...\"} or a chat:",
      "{\"messages\": [...], \"tools\": [...], \"add_generation_prompt\": true,",
      "\"chat_template_kwargs\": {...}} (as in an OpenAI chat body), rendered with the",
      "model's chat template. Prints one JSON array of token ids per line (no special",
      "tokens added), or with --text the rendered text as a JSON string. A bad line",
      "prints {\"error\": {\"message\": ..., \"param\": FIELD}}; the next lines go on."
    })
final class TokenizeCommand implements Callable<Integer> {
  /** Output JSON: ASCII only, so that it reads the same whatever the console's encoding. */
  private static final ObjectMapper OUT = JsonMapper.builder().enable(JsonWriteFeature.ESCAPE_NON_ASCII).build();
  private static final ProtocolCodec CODEC = new ProtocolCodec();

  @Spec
  CommandSpec spec;

  @Option(names = "--tokenizer", required = true, paramLabel = "PATH",
      description = "The model's tokenizer directory (tokenizer.json, tokenizer_config.json).")
  Path tokenizerDir;

  @Option(names = "--text", description = "Print the rendered text (a JSON string) instead of the token ids.")
  boolean text;

  InputStream in = System.in;

  @Override
  public Integer call() throws IOException {
    if (!Files.isDirectory(tokenizerDir)) {
      throw new ParameterException(spec.commandLine(), "--tokenizer: " + tokenizerDir + " is not a directory");
    }
    ModelTokenizer tokenizer;
    try {
      tokenizer = ModelTokenizer.load(tokenizerDir);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), "--tokenizer: " + e.getMessage());
    }
    PrintWriter out = spec.commandLine().getOut();
    try (tokenizer) {
      BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
      for (String line; (line = r.readLine()) != null; ) {
        if (line.isBlank()) {
          continue;
        }
        out.println(answer(tokenizer, line));
        out.flush();
      }
    }
    return 0;
  }

  /** The output line for one input line: the ids (or text), or the error. */
  private String answer(ModelTokenizer tokenizer, String line) {
    try {
      JsonNode node = CODEC.readTree(line.getBytes(StandardCharsets.UTF_8));
      if (!node.isObject()) {
        return error("expected a JSON object with prompt or messages, found " + kind(node), null);
      }
      if (node.has("prompt") && node.has("messages")) {
        return error("give either prompt or messages, not both", "prompt");
      }
      if (node.has("prompt")) {
        JsonNode prompt = node.get("prompt");
        if (!prompt.isTextual()) {
          return error("prompt must be a string, found " + kind(prompt), "prompt");
        }
        return text ? OUT.writeValueAsString(prompt.asText()) : ids(tokenizer.encode(prompt.asText(), false));
      }
      if (!node.has("messages")) {
        return error("a line needs prompt (a string) or messages (an array of chat messages)", "messages");
      }
      ObjectNode body = (ObjectNode) node;
      if (!body.has("model")) {
        body.put("model", "tokenize");  // the protocol requires one; the tokenizer does not read it
      }
      ChatCompletionRequest request = CODEC.parseChatCompletionRequest(CODEC.toJsonBytes(body));
      ChatInput input = OpenAiChat.toInput(request);
      String rendered = tokenizer.renderChat(input);
      return text ? OUT.writeValueAsString(rendered) : ids(tokenizer.encodeRendered(rendered));
    } catch (ProtocolException e) {
      return error(e.getMessage(), e.field());
    } catch (TemplateException e) {
      return error((e.raisedByTemplate() ? "the chat template refused the conversation: " : "") + e.getMessage(),
          "messages");
    } catch (IllegalStateException e) {  // the model has no chat template
      return error(e.getMessage(), "messages");
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);  // writing a string cannot fail
    }
  }

  private static String kind(JsonNode node) {
    return node.getNodeType().toString().toLowerCase(java.util.Locale.ROOT);
  }

  private static String ids(int[] ids) {
    StringBuilder sb = new StringBuilder(ids.length * 7 + 2).append('[');
    for (int i = 0; i < ids.length; i++) {
      sb.append(i == 0 ? "" : ",").append(ids[i]);
    }
    return sb.append(']').toString();
  }

  private static String error(String message, String param) {
    ObjectNode root = OUT.createObjectNode();
    ObjectNode error = root.putObject("error");
    error.put("message", message);
    error.put("param", param);
    try {
      return OUT.writeValueAsString(root);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }
}
