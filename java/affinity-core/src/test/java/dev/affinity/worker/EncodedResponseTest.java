package dev.affinity.worker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.OpaqueState;
import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.protocol.ResponseScan;
import dev.affinity.protocol.SentPrompt;
import dev.affinity.protocol.TokenIds;
import dev.affinity.protocol.UsageInfo;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The one-pass relay of a worker's whole answer ({@link EncodedResponse}, {@link ResponseScan}) against the record
 * path it replaces: parse into records, {@code withoutDisaggregatedParams}, {@code withUsageFromContext}, write. The
 * same JSON for every answer the records accept, the same error for every answer they refuse, the same values read.
 */
class EncodedResponseTest {
  private static final ProtocolCodec CODEC = new ProtocolCodec();
  private static final JsonNodeFactory F = JsonNodeFactory.instance;
  private static final UsageInfo CTX_USAGE = new UsageInfo(1000, 1, 1001, 512);

  /** An Affinity worker's generation answer, fields in the records' order. */
  private static final String AFFINITY_GEN = "{\"id\":\"cmpl-1099511627800\",\"object\":\"text_completion\","
      + "\"created\":1796159545,\"model\":\"affinity-sim\",\"choices\":[{\"index\":0,\"text\":\"ipp a b\","
      + "\"finish_reason\":\"length\",\"disaggregated_params\":{\"request_type\":\"generation_only\","
      + "\"ctx_request_id\":1,\"disagg_request_id\":1099511627800}}],\"usage\":{\"prompt_tokens\":7,"
      + "\"completion_tokens\":4,\"total_tokens\":11,\"prompt_tokens_details\":{\"cached_tokens\":0}},"
      + "\"prompt_token_ids\":[41551,757,264]}";

  /** A trtllm-serve-like chat answer: nulls for absent fields, an unmodelled field, unicode. */
  private static final String TRTLLM_CHAT = "{\"id\":\"chatcmpl-9\",\"object\":\"chat.completion\",\"created\":1,"
      + "\"model\":\"m\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"h\\u00e9llo \\ud83d\\ude00\\n\","
      + "\"reasoning_content\":null,\"reasoning\":null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\","
      + "\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\": 1}\"}}]},\"logprobs\":null,\"finish_reason\":\"tool_calls\","
      + "\"stop_reason\":null,\"mm_embedding_handle\":null,\"disaggregated_params\":null}],"
      + "\"usage\":{\"prompt_tokens\":3,\"total_tokens\":5,\"completion_tokens\":2,\"prompt_tokens_details\":null},"
      + "\"prompt_token_ids\":null,\"x\":1.50e-7}";

  /**
   * A context answer to a leg that sent its prompt as ids: the answer's {@code prompt_token_ids} (the same ids) are
   * skipped, and the sent ids stand for them; a relayed answer, or a leg that sent text, still reads them.
   */
  @Test
  void theSentIdsStandForAContextAnswersPromptIds() {
    byte[] json = AFFINITY_GEN.getBytes(StandardCharsets.UTF_8);
    TokenIds sent = TokenIds.of(41551, 757, 264);
    EncodedResponse skipped = EncodedResponse.read(json, false, false, CODEC, new SentPrompt(sent, null));
    assertTrue(sent == skipped.promptTokenIds(), "the sent ids themselves");
    assertEquals(EncodedResponse.read(json, false, false, CODEC).usage(), skipped.usage());
    assertEquals(EncodedResponse.read(json, false, false, CODEC).firstDisaggregatedParams(),
        skipped.firstDisaggregatedParams());

    // a chat leg that sent base64 ids: the answer's string is left unread, the sent one stands for it
    String sentB64 = TokenIds.of(41551, 757, 264).toBase64();
    byte[] chat = ("{\"id\":\"c\",\"object\":\"chat.completion\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,"
        + "\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":\"length\"}],\"prompt_token_ids\":null,"
        + "\"prompt_token_ids_b64\":\"" + sentB64 + "\"}").getBytes(StandardCharsets.UTF_8);
    EncodedResponse b64 = EncodedResponse.read(chat, true, false, CODEC, new SentPrompt(null, new String(sentB64)));
    assertEquals(sentB64, b64.promptTokenIdsB64());
    assertEquals(sentB64, EncodedResponse.read(chat, true, false, CODEC, null).promptTokenIdsB64(), "read when not sent");
    assertEquals(sentB64, EncodedResponse.read(chat, true, true, CODEC, new SentPrompt(null, "x")).promptTokenIdsB64(),
        "read when relayed");

    TokenIds other = TokenIds.of(1, 2, 3);
    EncodedResponse relayed = EncodedResponse.read(json, false, true, CODEC, new SentPrompt(other, null));
    assertEquals(sent, relayed.promptTokenIds(), "a relayed answer is read and copied as it is");
    assertEquals(sent, EncodedResponse.read(json, false, false, CODEC, null).promptTokenIds());
  }

  @Test
  void relaysAnAffinityWorkersAnswerAsTheRecordsWriteIt() {
    byte[] json = AFFINITY_GEN.getBytes(StandardCharsets.UTF_8);
    EncodedResponse r = EncodedResponse.read(json, false, true, CODEC);
    assertEquals("EncodedResponse[scanned]", r.toString());
    for (UsageInfo ctx : new UsageInfo[] {null, CTX_USAGE}) {
      assertArrayEquals(recordPath(json, false, ctx), r.forClient(ctx).json(CODEC)); // byte for byte
    }
    String client = new String(r.forClient(CTX_USAGE).json(CODEC), StandardCharsets.UTF_8);
    assertTrue(client.contains("\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":4,\"total_tokens\":1004,"
        + "\"prompt_tokens_details\":{\"cached_tokens\":512}}"), client);
    assertTrue(!client.contains("disaggregated_params"), client);
    assertEquals(7, r.usage().promptTokens());
    assertEquals(TokenIds.of(41551, 757, 264), r.promptTokenIds());
    assertEquals("length", r.firstFinishReason().orElseThrow());
    assertEquals(1L, r.firstDisaggregatedParams().orElseThrow().ctxRequestId());
  }

  @Test
  void relaysAStockWorkersChatAnswerWithItsNullsAsTheRecordsWriteIt() {
    byte[] json = TRTLLM_CHAT.getBytes(StandardCharsets.UTF_8);
    EncodedResponse r = EncodedResponse.read(json, true, true, CODEC);
    assertEquals("EncodedResponse[scanned]", r.toString());
    for (UsageInfo ctx : new UsageInfo[] {null, CTX_USAGE}) {
      assertEquals(CODEC.readTree(recordPath(json, true, ctx)), CODEC.readTree(r.forClient(ctx).json(CODEC)));
    }
    assertTrue(r.firstDisaggregatedParams().isEmpty());
    assertNull(r.promptTokenIds());
  }

  @Test
  void aContextOnlyLegIsScannedNotCopiedAndItsClientFormIsWrittenFromRecords() {
    byte[] json = AFFINITY_GEN.getBytes(StandardCharsets.UTF_8);
    ResponseScan scan = CODEC.scanResponse(json, false, false);
    assertNotNull(scan);
    assertTrue(!scan.relayed());
    assertThrows(IllegalStateException.class, () -> scan.clientJson(null));
    EncodedResponse r = EncodedResponse.read(json, false, false, CODEC);
    assertArrayEquals(recordPath(json, false, null), r.forClient(null).json(CODEC));
  }

  @Test
  void whatTheScanDoesNotHandleIsParsed() {
    String parts = "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}}]}";
    assertNull(CODEC.scanResponse(parts.getBytes(StandardCharsets.UTF_8), true, true));
    EncodedResponse r = EncodedResponse.read(parts.getBytes(StandardCharsets.UTF_8), true, true, CODEC);
    assertEquals("EncodedResponse[records]", r.toString());
    assertEquals(CODEC.readTree(recordPath(parts.getBytes(StandardCharsets.UTF_8), true, null)),
        CODEC.readTree(r.forClient(null).json(CODEC)));
    ProtocolException e = assertThrows(ProtocolException.class,
        () -> EncodedResponse.read("{\"choices\":[{\"index\":\"0\"}]}".getBytes(StandardCharsets.UTF_8), false, true,
            CODEC));
    assertEquals(502, e.status());
  }

  @Test
  void theScanAndTheRecordsAgreeOnTheChoicesAndTheFirstOnesOutput() {
    String[][] cases = {  // answer, chat
        {AFFINITY_GEN, "false"}, {TRTLLM_CHAT, "true"}, {"{\"choices\":[]}", "false"},
        {"{\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}]}", "false"},
        {"{\"choices\":[{\"index\":0,\"text\":null},{\"index\":1,\"text\":\"b\"}]}", "false"},
        {"{\"choices\":[{\"index\":0,\"finish_reason\":\"stop\"}]}", "true"},
        {"{\"choices\":[{\"index\":0,\"message\":null}]}", "true"},
        {"{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"\"}}]}", "true"}};
    List<String> seen = new ArrayList<>();
    for (String[] c : cases) {
      byte[] json = c[0].getBytes(StandardCharsets.UTF_8);
      boolean chat = Boolean.parseBoolean(c[1]);
      EncodedResponse scanned = EncodedResponse.read(json, chat, true, CODEC);
      EncodedResponse records = EncodedResponse.of(chat ? CODEC.parseChatCompletionResponse(json)
          : CODEC.parseCompletionResponse(json));
      assertEquals(records.choiceCount(), scanned.choiceCount(), c[0]);
      assertEquals(records.firstChoiceHasOutput(), scanned.firstChoiceHasOutput(), c[0]);
      assertEquals(chat, scanned.isChat());
      assertEquals(chat, records.isChat());
      seen.add(scanned.choiceCount() + (scanned.firstChoiceHasOutput() ? " out" : " none"));
    }
    assertEquals(List.of("1 out", "1 out", "0 none", "1 out", "2 none", "1 none", "1 none", "1 out"), seen);
    EncodedResponse empty = EncodedResponse.read("{}".getBytes(StandardCharsets.UTF_8), true, true, CODEC);
    assertEquals(0, empty.choiceCount(), "{} is parsed (the scan gives up on a missing choices)");
    assertTrue(!empty.firstChoiceHasOutput());
  }

  @Test
  void anInProcessAnswerIsWrittenFromItsRecords() {
    OpenAiResponse parsed = CODEC.parseCompletionResponse(AFFINITY_GEN.getBytes(StandardCharsets.UTF_8));
    EncodedResponse r = EncodedResponse.of(parsed);
    assertEquals(parsed, r.parsed());
    assertArrayEquals(CODEC.toJsonBytes(parsed.withoutDisaggregatedParams().withUsageFromContext(CTX_USAGE)),
        r.forClient(CTX_USAGE).json(CODEC));
    assertEquals(1000, r.forClient(CTX_USAGE).usage().promptTokens());
    assertTrue(r.forClient(null).firstDisaggregatedParams().isEmpty());
  }

  /** Random answers, valid and broken, of both kinds: the relay writes what the records write, or fails as they do. */
  @Test
  void randomAnswersComeOutAsTheRecordPathWritesThem() {
    Random random = new Random(14);
    int relayed = 0;
    int refused = 0;
    for (int i = 0; i < 4000; i++) {
      boolean chat = random.nextBoolean();
      String json = new Gen(random).answer(chat);
      byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
      OpenAiResponse expected;
      try {
        expected = chat ? CODEC.parseChatCompletionResponse(bytes) : CODEC.parseCompletionResponse(bytes);
      } catch (ProtocolException e) {
        refused++;
        for (boolean relay : new boolean[] {true, false}) {
          ProtocolException got = assertThrows(ProtocolException.class,
              () -> EncodedResponse.read(bytes, chat, relay, CODEC), json);
          assertEquals(e.getMessage(), got.getMessage(), json);
          assertEquals(502, got.status());
        }
        continue;
      }
      for (boolean relay : new boolean[] {true, false}) {
        EncodedResponse r;
        try {
          r = EncodedResponse.read(bytes, chat, relay, CODEC);
        } catch (RuntimeException e) {
          fail("the records accept it but the relay does not: " + json, e);
          return;
        }
        if (relay && CODEC.scanResponse(bytes, chat, true) != null) {
          relayed++;
        }
        assertEquals(expected.usage(), r.usage(), json);
        assertEquals(expected.promptTokenIds(), r.promptTokenIds(), json);
        assertEquals(expected.firstDisaggregatedParams(), r.firstDisaggregatedParams(), json);
        assertEquals(expected.firstFinishReason(), r.firstFinishReason(), json);
        for (UsageInfo ctx : new UsageInfo[] {null, CTX_USAGE, new UsageInfo(null, null, null, (Integer) null)}) {
          JsonNode want = CODEC.readTree(recordPath(bytes, chat, ctx));
          JsonNode got = CODEC.readTree(r.forClient(ctx).json(CODEC));
          assertEquals(want, got, json);
          assertEquals(expected.withoutDisaggregatedParams().withUsageFromContext(ctx == null ? null : ctx).usage(),
              r.forClient(ctx).usage(), json);
        }
      }
    }
    assertTrue(relayed > 2000, "relayed " + relayed); // the generator mostly makes answers the relay handles
    assertTrue(refused > 200, "refused " + refused);
  }

  /** What the frontend wrote before: the records, without disaggregated params, usage from the context. */
  private static byte[] recordPath(byte[] json, boolean chat, UsageInfo ctx) {
    OpenAiResponse r = chat ? CODEC.parseChatCompletionResponse(json) : CODEC.parseCompletionResponse(json);
    r = r.withoutDisaggregatedParams();
    if (ctx != null) {
      r = r.withUsageFromContext(ctx);
    }
    return CODEC.toJsonBytes(r);
  }

  /** A random answer as JSON text: modelled fields present, null or absent, unmodelled ones, shuffled, sometimes broken. */
  private static final class Gen {
    private final Random r;

    Gen(Random r) {
      this.r = r;
    }

    String answer(boolean chat) {
      ObjectNode a = F.objectNode();
      maybe(a, "id", () -> F.textNode((chat ? "chatcmpl-" : "cmpl-") + r.nextInt(1000)));
      maybe(a, "object", () -> F.textNode(chat ? "chat.completion" : "text_completion"));
      maybe(a, "created", () -> r.nextBoolean() ? F.numberNode(1796159545L) : F.numberNode(1L << 40));
      maybe(a, "model", () -> F.textNode(text()));
      ArrayNode choices = F.arrayNode();
      int n = r.nextInt(4);
      for (int i = 0; i < n; i++) {
        choices.add(chat ? chatChoice(i) : completionChoice(i));
      }
      a.set("choices", choices);
      maybe(a, "usage", this::usage);
      maybe(a, "prompt_token_ids", this::ids);
      if (chat) {
        maybe(a, "prompt_token_ids_b64", () -> F.textNode("BQAAAAYAAAA="));
      }
      extras(a);
      ObjectNode answer = shuffled(a);
      String json = answer.toString();
      return r.nextInt(4) == 0 ? break_(json, answer, chat) : json;
    }

    private ObjectNode completionChoice(int i) {
      ObjectNode c = F.objectNode();
      maybe(c, "index", () -> F.numberNode(i));
      maybe(c, "text", () -> F.textNode(text()));
      maybe(c, "token_ids", this::ids);
      maybe(c, "logprobs", this::logprobs);
      maybe(c, "finish_reason", () -> F.textNode(r.nextBoolean() ? "length" : "stop"));
      maybe(c, "stop_reason", this::stopReason);
      maybe(c, "disaggregated_params", this::params);
      extras(c);
      return shuffled(c);
    }

    private ObjectNode chatChoice(int i) {
      ObjectNode c = F.objectNode();
      maybe(c, "index", () -> F.numberNode(i));
      ObjectNode m = F.objectNode();
      m.put("role", "assistant");
      maybe(m, "content", () -> F.textNode(text()));
      maybe(m, "name", () -> F.textNode(text()));
      maybe(m, "tool_call_id", () -> F.textNode("call_" + r.nextInt(9)));
      maybe(m, "reasoning", () -> F.textNode(text()));
      maybe(m, "reasoning_content", () -> F.textNode(text()));
      maybe(m, "tool_calls", () -> {
        ArrayNode calls = F.arrayNode();
        for (int k = r.nextInt(3); k > 0; k--) {
          ObjectNode call = F.objectNode();
          maybe(call, "id", () -> F.textNode("call_" + r.nextInt(99)));
          maybe(call, "type", () -> F.textNode("function"));
          maybe(call, "index", () -> F.numberNode(r.nextInt(3)));
          maybe(call, "function", () -> {
            ObjectNode f = F.objectNode();
            maybe(f, "name", () -> F.textNode("get_" + r.nextInt(9)));
            maybe(f, "arguments", () -> F.textNode("{\"q\": \"" + text().replace("\"", "") + "\"}"));
            extras(f);
            return shuffled(f);
          });
          extras(call);
          calls.add(shuffled(call));
        }
        return calls;
      });
      extras(m);
      c.set("message", shuffled(m));
      maybe(c, "logprobs", this::logprobs);
      maybe(c, "finish_reason", () -> F.textNode(r.nextBoolean() ? "tool_calls" : "stop"));
      maybe(c, "stop_reason", this::stopReason);
      maybe(c, "disaggregated_params", this::params);
      extras(c);
      return shuffled(c);
    }

    private JsonNode usage() {
      ObjectNode u = F.objectNode();
      maybe(u, "prompt_tokens", () -> F.numberNode(r.nextInt(5000)));
      maybe(u, "completion_tokens", () -> F.numberNode(r.nextInt(500)));
      maybe(u, "total_tokens", () -> F.numberNode(r.nextInt(5500)));
      maybe(u, "prompt_tokens_details", () -> {
        ObjectNode d = F.objectNode();
        maybe(d, "cached_tokens", () -> F.numberNode(r.nextInt(5000)));
        extras(d);
        return d;
      });
      extras(u);
      return shuffled(u);
    }

    private JsonNode params() {
      DisaggregatedParams p = DisaggregatedParams.builder(
              r.nextBoolean() ? DisaggRequestType.CONTEXT_ONLY : DisaggRequestType.GENERATION_ONLY)
          .firstGenTokens(TokenIds.of(r.nextInt(50000))).ctxRequestId((long) r.nextInt(100))
          .opaqueState(OpaqueState.ofBytes(new byte[] {1, 2, 3})).ctxDpRank(r.nextBoolean() ? r.nextInt(4) : null)
          .disaggRequestId((1L << 40) + r.nextInt(1000)).build();
      return CODEC.toTree(p);
    }

    private JsonNode logprobs() {
      ObjectNode l = F.objectNode();
      ArrayNode values = l.putArray(r.nextBoolean() ? "token_logprobs" : "content");
      for (int k = r.nextInt(4); k > 0; k--) {
        values.add(number());
      }
      if (r.nextBoolean()) {
        l.putArray("text_offset").add(0).add(3);
      }
      return l;
    }

    private JsonNode stopReason() {
      return switch (r.nextInt(3)) {
        case 0 -> F.textNode("</s>");
        case 1 -> F.numberNode(128001);
        default -> F.numberNode(new BigDecimal("2.50"));
      };
    }

    private JsonNode ids() {
      ArrayNode a = F.arrayNode();
      for (int k = r.nextInt(5); k > 0; k--) {
        a.add(r.nextInt(Integer.MAX_VALUE));
      }
      return a;
    }

    /** Numbers the records keep exactly: decimals with trailing zeros and exponents, longs, big integers. */
    private JsonNode number() {
      return switch (r.nextInt(7)) {
        case 0 -> F.numberNode(new BigDecimal("-0.1000"));
        case 1 -> F.numberNode(new BigDecimal("1E-7"));
        case 2 -> F.numberNode(new BigDecimal("123456789.123456789123456789"));
        case 3 -> F.numberNode(-r.nextInt(100));
        case 4 -> F.numberNode(1L << 42);
        case 5 -> F.numberNode(new BigInteger("123456789012345678901234567890"));
        default -> F.numberNode(new BigDecimal("3.0E+10"));
      };
    }

    private String text() {
      String[] pieces = {"fox", " ", "h\u00e9llo", "\uD83D\uDE00", "\n", "\"q\"", "\\", "\u0001", "\u2028", "\u4f60\u597d",
          "</script>", ""};
      StringBuilder b = new StringBuilder();
      for (int k = r.nextInt(5); k > 0; k--) {
        b.append(pieces[r.nextInt(pieces.length)]);
      }
      return b.toString();
    }

    private void extras(ObjectNode o) {
      for (int k = r.nextInt(3); k > 0; k--) {
        String name = "x_" + r.nextInt(20);
        switch (r.nextInt(6)) {
          case 0 -> o.putNull(name);
          case 1 -> o.set(name, number());
          case 2 -> o.put(name, text());
          case 3 -> o.put(name, r.nextBoolean());
          case 4 -> o.putObject(name).set("nested", F.arrayNode().add(number()).add(F.objectNode().put("k", text())));
          default -> o.putArray(name);
        }
      }
    }

    /** Present (3/5), explicit null (1/5) or absent (1/5). */
    private void maybe(ObjectNode o, String name, java.util.function.Supplier<JsonNode> value) {
      int k = r.nextInt(5);
      if (k < 3) {
        o.set(name, value.get());
      } else if (k == 3) {
        o.putNull(name);
      }
    }

    private ObjectNode shuffled(ObjectNode o) {
      if (r.nextBoolean()) {
        return o; // the order it was built in: the records' order
      }
      List<Map.Entry<String, JsonNode>> fields = new ArrayList<>();
      for (Iterator<Map.Entry<String, JsonNode>> it = o.fields(); it.hasNext(); ) {
        fields.add(it.next());
      }
      Collections.shuffle(fields, r);
      ObjectNode s = F.objectNode();
      fields.forEach(e -> s.set(e.getKey(), e.getValue()));
      return s;
    }

    /** One way of breaking an answer, or of giving it a shape only the records handle. */
    private String break_(String json, ObjectNode answer, boolean chat) {
      ObjectNode a = answer.deepCopy();
      ArrayNode choices = (ArrayNode) a.get("choices");
      ObjectNode first = choices.isEmpty() ? null : (ObjectNode) choices.get(0);
      switch (r.nextInt(18)) {
        case 0 -> a.put("created", 1.5);
        case 1 -> a.put("id", 7);
        case 2 -> a.putNull("choices");
        case 3 -> a.remove("choices");
        case 4 -> choices.addNull();
        case 5 -> a.putArray("usage");
        case 6 -> a.putObject("usage").put("prompt_tokens", "12");
        case 7 -> {
          if (first != null) {
            first.put("index", "0");
          }
        }
        case 8 -> {
          if (first != null) {
            first.putArray("logprobs");
          }
        }
        case 9 -> {
          if (first != null) {
            first.putObject("stop_reason");
          }
        }
        case 10 -> {
          if (first != null) {
            first.putObject("disaggregated_params").put("request_type", "sideways");
          }
        }
        case 11 -> {
          if (first != null && chat) {
            ((ObjectNode) first.get("message")).remove("role");
          } else if (first != null) {
            first.put("text", 3);
          }
        }
        case 12 -> {
          if (first != null && chat) {
            ((ObjectNode) first.get("message")).putArray("content").addObject().put("type", "text").put("text", "t");
          } else if (first != null) {
            first.putArray("token_ids").add(1L << 35);
          }
        }
        case 13 -> {
          if (first != null) {
            first.put("index", 1L << 33);
          }
        }
        case 14 -> {
          return json.substring(0, json.length() - 1) + ",\"id\":\"dup\"}"; // a duplicate key (last wins)
        }
        case 15 -> { // a duplicate key inside an unmodelled object (the tree keeps the last value)
          ObjectNode x = a.putObject("x_dup");
          x.put("k", 1);
          return a.toString().replace("\"x_dup\":{\"k\":1}", "\"x_dup\":{\"k\":1,\"j\":2,\"k\":3}");
        }
        case 16 -> { // a duplicate count in usage
          a.putObject("usage").put("prompt_tokens", 1).put("total_tokens", 2);
          return a.toString().replace("\"total_tokens\":2}", "\"total_tokens\":2,\"prompt_tokens\":5}");
        }
        default -> {
          return json + (r.nextBoolean() ? " {}" : "]");
        }
      }
      return a.toString();
    }
  }
}
