package dev.affinity.routing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ChatMessage;
import dev.affinity.protocol.MessageContent;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.commons.codec.digest.Blake3;

/**
 * Upstream's chat content key, which pins a conversation to the server it used before in {@code kv_cache_aware}
 * ({@code KvCacheAwareRouter._content_affinity_key} in {@code tensorrt_llm/serve/router.py}): BLAKE3, keyed with
 * {@code TensorRT-LLM-route-affinity-v1!!}, of the Python {@code str} of the first two messages' {@code content}
 * followed by {@code str(list(prompt_token_ids[:256]))} when the request has ids, 8 bytes read as a little-endian
 * unsigned integer. Null for requests without messages. Content is written as Python writes it: a string as is, a
 * missing or null one as {@code None}, a list of parts as the repr of its dicts (keys in the order sent).
 */
public final class ContentKey {
  static final byte[] SEED = "TensorRT-LLM-route-affinity-v1!!".getBytes(StandardCharsets.US_ASCII);
  /** Leading ids folded into the key (upstream's {@code ROUTE_AFFINITY_TOKEN_PREFIX}). */
  static final int TOKEN_PREFIX = 256;
  private static final ObjectMapper JSON = new ObjectMapper();

  private ContentKey() {}

  /**
   * @param ids the request's {@code prompt_token_ids} as upstream's router sees them when it computes the key: the
   *     client's, or the ids written back to the request; null for none
   */
  public static Long of(ChatCompletionRequest chat, int[] ids) {
    List<ChatMessage> messages = chat.messages();
    if (messages == null || messages.isEmpty()) {
      return null;
    }
    StringBuilder text = new StringBuilder();
    for (int i = 0; i < Math.min(2, messages.size()); i++) {
      MessageContent content = messages.get(i).content();
      if (content instanceof MessageContent.Text t) {
        text.append(t.value());
      } else if (content == null || content == MessageContent.ExplicitNull.INSTANCE) {
        text.append("None");
      } else {
        repr(text, JSON.valueToTree(content));
      }
    }
    if (ids != null && ids.length > 0) {
      text.append('[');
      for (int i = 0; i < Math.min(TOKEN_PREFIX, ids.length); i++) {
        if (i > 0) {
          text.append(", ");
        }
        text.append(ids[i]);
      }
      text.append(']');
    }
    byte[] digest = Blake3.initKeyedHash(SEED).update(text.toString().getBytes(StandardCharsets.UTF_8))
        .doFinalize(8);
    long v = 0;
    for (int i = 7; i >= 0; i--) {
      v = (v << 8) | (digest[i] & 0xFF);
    }
    return v;
  }

  /** Python's {@code repr} of a JSON value (dicts, lists, strings, numbers, booleans, None). */
  static void repr(StringBuilder out, JsonNode n) {
    if (n == null || n.isNull()) {
      out.append("None");
    } else if (n.isTextual()) {
      stringRepr(out, n.asText());
    } else if (n.isBoolean()) {
      out.append(n.asBoolean() ? "True" : "False");
    } else if (n.isIntegralNumber()) {
      out.append(n.bigIntegerValue());
    } else if (n.isNumber()) {
      out.append(n.asDouble());
    } else if (n.isArray()) {
      out.append('[');
      for (int i = 0; i < n.size(); i++) {
        if (i > 0) {
          out.append(", ");
        }
        repr(out, n.get(i));
      }
      out.append(']');
    } else {
      out.append('{');
      boolean first = true;
      for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        if (!first) {
          out.append(", ");
        }
        first = false;
        stringRepr(out, e.getKey());
        out.append(": ");
        repr(out, e.getValue());
      }
      out.append('}');
    }
  }

  /** Python's {@code repr(str)}: single quotes unless the text has one and no double quote. */
  static void stringRepr(StringBuilder out, String s) {
    char q = s.indexOf('\'') >= 0 && s.indexOf('"') < 0 ? '"' : '\'';
    out.append(q);
    for (int i = 0; i < s.length(); ) {
      int c = s.codePointAt(i);
      i += Character.charCount(c);
      if (c == q || c == '\\') {
        out.append('\\').appendCodePoint(c);
      } else if (c == '\n') {
        out.append("\\n");
      } else if (c == '\r') {
        out.append("\\r");
      } else if (c == '\t') {
        out.append("\\t");
      } else if (c < 0x20 || c == 0x7F) {
        out.append(String.format("\\x%02x", c));
      } else if (Character.isISOControl(c) || Character.getType(c) == Character.UNASSIGNED
          || Character.getType(c) == Character.SURROGATE || Character.getType(c) == Character.LINE_SEPARATOR
          || Character.getType(c) == Character.PARAGRAPH_SEPARATOR || (Character.isSpaceChar(c) && c != ' ')
          || Character.getType(c) == Character.FORMAT || Character.getType(c) == Character.PRIVATE_USE) {
        out.append(c <= 0xFF ? String.format("\\x%02x", c) : c <= 0xFFFF ? String.format("\\u%04x", c)
            : String.format("\\U%08x", c));
      } else {
        out.appendCodePoint(c);
      }
    }
    out.append(q);
  }
}
