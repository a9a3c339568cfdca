package dev.affinity.protocol;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Random;
import java.util.Set;

/**
 * Random request bodies for the property tests: every modelled field that is present has a valid,
 * non-null value; unmodelled fields with arbitrary JSON values (nulls, big integers, exact decimals,
 * control characters, non-BMP text) are sprinkled at the top level and inside every open nested object.
 */
final class RequestGen {

  private static final JsonNodeFactory F = JsonNodeFactory.instance;
  private static final String[] TEXT = {"", "a", "hello world", "tab\tnew\nline", "quote\" back\\slash",
      "\u0000\u001f ctl", "caf\u00e9", "\u4e2d\u6587", "emoji \ud83d\ude00", "\u2028\u2029", "subagent"};

  private RequestGen() {}

  static ObjectNode completion(Random r) {
    ObjectNode o = F.objectNode();
    o.put("model", text(r));
    if (r.nextBoolean()) {
      o.put("prompt", text(r));
    } else {
      o.set("prompt", tokens(r, 1 + r.nextInt(6)));
    }
    common(r, o);
    if (r.nextInt(3) == 0) {
      o.put("logprobs", r.nextInt(6));
    }
    if (r.nextInt(3) == 0) {
      o.put("echo", r.nextBoolean());
    }
    extras(r, o, CompletionRequest.FIELDS);
    return o;
  }

  static ObjectNode chat(Random r) {
    ObjectNode o = F.objectNode();
    o.put("model", text(r));
    ArrayNode messages = o.putArray("messages");
    for (int i = 0, n = 1 + r.nextInt(4); i < n; i++) {
      messages.add(message(r));
    }
    common(r, o);
    maybe(r, o, "prompt_token_ids", () -> tokens(r, r.nextInt(5)));
    maybe(r, o, "prompt_token_ids_b64", () -> F.textNode("AQAAAA=="));
    maybe(r, o, "max_completion_tokens", () -> F.numberNode(r.nextInt(4096)));
    maybe(r, o, "logprobs", () -> F.booleanNode(r.nextBoolean()));
    maybe(r, o, "top_logprobs", () -> F.numberNode(r.nextInt(20)));
    maybe(r, o, "echo", () -> F.booleanNode(r.nextBoolean()));
    maybe(r, o, "tools", () -> F.arrayNode().add(object(r, 2)));
    maybe(r, o, "tool_choice", () -> r.nextBoolean() ? F.textNode("auto") : object(r, 2));
    maybe(r, o, "chat_template", () -> F.textNode(text(r)));
    maybe(r, o, "chat_template_kwargs", () -> object(r, 2));
    maybe(r, o, "add_generation_prompt", () -> F.booleanNode(r.nextBoolean()));
    maybe(r, o, "cache_salt", () -> F.textNode(text(r)));
    extras(r, o, ChatCompletionRequest.FIELDS);
    return o;
  }

  private static void common(Random r, ObjectNode o) {
    maybe(r, o, "max_tokens", () -> F.numberNode(r.nextInt(4096)));
    maybe(r, o, "temperature", () -> F.numberNode(decimal(r, 2)));
    maybe(r, o, "top_p", () -> F.numberNode(decimal(r, 1)));
    maybe(r, o, "top_k", () -> F.numberNode(r.nextInt(100)));
    maybe(r, o, "n", () -> F.numberNode(1 + r.nextInt(3)));
    maybe(r, o, "seed", () -> F.numberNode(r.nextLong()));
    maybe(r, o, "stop", () -> r.nextBoolean() ? F.textNode(text(r)) : F.arrayNode().add(text(r)).add(text(r)));
    maybe(r, o, "stream", () -> F.booleanNode(r.nextBoolean()));
    maybe(r, o, "stream_options", () -> {
      ObjectNode so = F.objectNode().put("include_usage", r.nextBoolean());
      extras(r, so, StreamOptions.FIELDS);
      return so;
    });
    maybe(r, o, "response_format", () -> object(r, 2));
    maybe(r, o, "user", () -> F.textNode(text(r)));
    maybe(r, o, "priority", () -> F.numberNode(decimal(r, 1)));
    maybe(r, o, "ignore_eos", () -> F.booleanNode(r.nextBoolean()));
    maybe(r, o, "add_special_tokens", () -> F.booleanNode(r.nextBoolean()));
    maybe(r, o, "conversation_params", () -> F.objectNode().put("conversation_id", "conv-" + r.nextInt(1000)));
    maybe(r, o, "disaggregated_params", () -> disaggregatedParams(r));
  }

  static ObjectNode disaggregatedParams(Random r) {
    ObjectNode p = F.objectNode();
    p.put("request_type", DisaggRequestType.values()[r.nextInt(3)].wire());
    maybe(r, p, "first_gen_tokens", () -> tokens(r, 1 + r.nextInt(3)));
    maybe(r, p, "first_gen_log_probs", () -> F.arrayNode().add(value(r, 1)));
    maybe(r, p, "ctx_request_id", () -> F.numberNode(r.nextLong()));
    maybe(r, p, "encoded_opaque_state", () -> F.textNode("AAEC"));
    maybe(r, p, "disagg_request_id", () -> F.numberNode(r.nextLong()));
    maybe(r, p, "ctx_dp_rank", () -> F.numberNode(r.nextInt(16)));
    maybe(r, p, "ctx_info_endpoint", () -> r.nextBoolean() ? F.textNode(text(r)) : F.arrayNode().add(text(r)));
    maybe(r, p, "schedule_style", () -> F.numberNode(r.nextInt(2)));
    maybe(r, p, "ctx_usage", () -> {
      ObjectNode u = F.objectNode().put("prompt_tokens", r.nextInt(1000)).put("total_tokens", r.nextInt(1000));
      extras(r, u, UsageInfo.FIELDS);
      return u;
    });
    maybe(r, p, "return_prompt_token_ids_b64", () -> F.booleanNode(r.nextBoolean()));
    maybe(r, p, "conversation_id", () -> F.textNode(text(r)));
    maybe(r, p, "artifact_version", () -> F.numberNode(r.nextInt(3)));
    maybe(r, p, "context_transceiver_lifecycle", () -> object(r, 2));
    extras(r, p, DisaggregatedParams.FIELDS);
    return p;
  }

  private static ObjectNode message(Random r) {
    ObjectNode m = F.objectNode();
    m.put("role", new String[] {"system", "user", "assistant", "tool", "developer"}[r.nextInt(5)]);
    switch (r.nextInt(4)) {
      case 0 -> m.put("content", text(r));
      case 1 -> {
        ArrayNode parts = m.putArray("content");
        for (int i = 0, n = r.nextInt(3); i < n; i++) {
          ObjectNode part = parts.addObject().put("type", r.nextBoolean() ? "text" : "image_url");
          part.put("text", text(r));
          extras(r, part, ContentPart.FIELDS);
        }
      }
      case 2 -> m.putNull("content");
      default -> { } // no content
    }
    maybe(r, m, "name", () -> F.textNode(text(r)));
    maybe(r, m, "reasoning_content", () -> F.textNode(text(r)));
    maybe(r, m, "tool_calls", () -> {
      ObjectNode call = F.objectNode().put("id", "call_" + r.nextInt(100)).put("type", "function");
      call.putObject("function").put("name", "f").put("arguments", "{}");
      extras(r, call, ToolCall.FIELDS);
      return F.arrayNode().add(call);
    });
    extras(r, m, ChatMessage.FIELDS);
    return m;
  }

  /** Adds 0..3 unmodelled fields with arbitrary values. */
  static void extras(Random r, ObjectNode o, Set<String> modelled) {
    for (int i = 0, n = r.nextInt(4); i < n; i++) {
      String name = name(r);
      if (!modelled.contains(name) && !name.equals(Json.SUBAGENT_AFFINITY_ID)) {
        o.set(name, value(r, 3));
      }
    }
  }

  static JsonNode value(Random r, int depth) {
    int kind = r.nextInt(depth > 0 ? 11 : 9);
    return switch (kind) {
      case 0 -> F.nullNode();
      case 1 -> F.booleanNode(r.nextBoolean());
      case 2 -> F.numberNode(r.nextInt());
      case 3 -> F.numberNode(r.nextLong());
      case 4 -> F.numberNode(new BigInteger(100, r).negate());
      case 5 -> F.numberNode(new BigDecimal(new BigInteger(80, r), r.nextInt(40) - 10));
      case 6 -> F.numberNode(decimal(r, 1000));
      case 7, 8 -> F.textNode(text(r));
      case 9 -> {
        ArrayNode a = F.arrayNode();
        for (int i = 0, n = r.nextInt(4); i < n; i++) {
          a.add(value(r, depth - 1));
        }
        yield a;
      }
      default -> object(r, depth - 1);
    };
  }

  static ObjectNode object(Random r, int depth) {
    ObjectNode o = F.objectNode();
    for (int i = 0, n = r.nextInt(4); i < n; i++) {
      o.set(name(r), value(r, Math.max(0, depth)));
    }
    return o;
  }

  private static ArrayNode tokens(Random r, int n) {
    ArrayNode a = F.arrayNode();
    for (int i = 0; i < n; i++) {
      a.add(r.nextInt(200_000));
    }
    return a;
  }

  /** A decimal in [0, max] with at most three fraction digits (exact as a double). */
  private static BigDecimal decimal(Random r, int max) {
    return BigDecimal.valueOf(r.nextInt(max * 1000 + 1), 3);
  }

  private static String name(Random r) {
    return r.nextInt(4) == 0 ? text(r) : "x_" + Integer.toString(r.nextInt(1 << 20), 36);
  }

  static String text(Random r) {
    String base = TEXT[r.nextInt(TEXT.length)];
    return r.nextBoolean() ? base : base + r.nextInt(1000);
  }

  private static void maybe(Random r, ObjectNode o, String field, java.util.function.Supplier<JsonNode> value) {
    if (r.nextInt(3) == 0) {
      o.set(field, value.get());
    }
  }
}
