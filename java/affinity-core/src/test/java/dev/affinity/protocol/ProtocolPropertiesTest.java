package dev.affinity.protocol;

import static dev.affinity.protocol.JsonAssert.CODEC;
import static dev.affinity.protocol.JsonAssert.assertEquivalent;
import static dev.affinity.protocol.JsonAssert.assertNoKey;
import static dev.affinity.protocol.JsonAssert.tree;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.function.Function;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/** Property-based checks of the codec: lossless forwarding, total error handling, server-private affinity id. */
class ProtocolPropertiesTest {

  private static final byte[] STRUCTURAL = "{}[]\",:0123456789-+.eEtrufalsn \\\n\u0000".getBytes(
      java.nio.charset.StandardCharsets.ISO_8859_1);

  // (a) random requests with random extra fields survive parse → serialize

  @Property(tries = 200)
  void completionRoundTripKeepsEveryField(@ForAll("completions") ObjectNode body) {
    byte[] in = CODEC.toJsonBytes(body);
    CompletionRequest parsed = CODEC.parseCompletionRequest(in);
    byte[] out = CODEC.toJsonBytes(parsed);
    assertEquivalent(tree(in), tree(out));
    assertEquals(parsed, CODEC.parseCompletionRequest(out));
  }

  @Property(tries = 200)
  void chatRoundTripKeepsEveryField(@ForAll("chats") ObjectNode body) {
    byte[] in = CODEC.toJsonBytes(body);
    ChatCompletionRequest parsed = CODEC.parseChatCompletionRequest(in);
    byte[] out = CODEC.toJsonBytes(parsed);
    assertEquivalent(tree(in), tree(out));
    assertEquals(parsed, CODEC.parseChatCompletionRequest(out));
  }

  @Property(tries = 100)
  void forwardedCopiesKeepEveryClientField(@ForAll("chats") ObjectNode body) {
    ChatCompletionRequest parsed = CODEC.parseChatCompletionRequest(CODEC.toJsonBytes(body));
    ChatCompletionRequest ctx = parsed.withoutStreaming()
        .withDisaggregatedParams(DisaggregatedParams.builder(DisaggRequestType.CONTEXT_ONLY).build());
    ObjectNode expected = body.deepCopy();
    expected.put("stream", false);
    expected.remove("stream_options");
    expected.set("disaggregated_params", tree("{\"request_type\":\"context_only\"}"));
    assertEquivalent(tree(CODEC.toJsonBytes(expected)), tree(CODEC.toJsonBytes(ctx)));
  }

  // (b) garbage never escapes as anything but ProtocolException

  @Property(tries = 600)
  void randomBytesOnlyEverFailWithProtocolException(@ForAll byte[] body) {
    parseEverything(body);
  }

  @Property(tries = 600)
  void mutatedRequestsOnlyEverFailWithProtocolException(@ForAll("mutatedRequests") byte[] body) {
    parseEverything(body);
  }

  // (c) no input sets the server-private sub-agent affinity id

  @Property(tries = 250)
  void noBodyCarriesASubagentAffinityId(@ForAll("withInjectedSubagentIds") byte[] body) {
    checkNoSubagent(body, CODEC::parseCompletionRequest, CompletionRequest::conversationParams);
    checkNoSubagent(body, CODEC::parseChatCompletionRequest, ChatCompletionRequest::conversationParams);
  }

  @Property(tries = 250)
  void noMutatedBodyCarriesASubagentAffinityId(@ForAll("mutatedRequests") byte[] body) {
    checkNoSubagent(body, CODEC::parseCompletionRequest, CompletionRequest::conversationParams);
    checkNoSubagent(body, CODEC::parseChatCompletionRequest, ChatCompletionRequest::conversationParams);
  }

  // ---- generators ----

  @Provide
  Arbitrary<ObjectNode> completions() {
    return Arbitraries.randomValue(RequestGen::completion);
  }

  @Provide
  Arbitrary<ObjectNode> chats() {
    return Arbitraries.randomValue(RequestGen::chat);
  }

  /** Valid requests with 1..8 random byte edits (structural characters, random bytes, cuts). */
  @Provide
  Arbitrary<byte[]> mutatedRequests() {
    return Arbitraries.randomValue(r -> {
      byte[] b = CODEC.toJsonBytes(r.nextBoolean() ? RequestGen.completion(r) : RequestGen.chat(r));
      for (int i = 0, n = 1 + r.nextInt(8); i < n && b.length > 0; i++) {
        int at = r.nextInt(b.length);
        switch (r.nextInt(4)) {
          case 0 -> b[at] = STRUCTURAL[r.nextInt(STRUCTURAL.length)];
          case 1 -> b[at] = (byte) r.nextInt(256);
          case 2 -> b = java.util.Arrays.copyOf(b, at);
          default -> {
            byte[] longer = new byte[b.length + 1];
            System.arraycopy(b, 0, longer, 0, at);
            longer[at] = STRUCTURAL[r.nextInt(STRUCTURAL.length)];
            System.arraycopy(b, at, longer, at + 1, b.length - at);
            b = longer;
          }
        }
      }
      return b;
    });
  }

  /** Valid requests with {@code subagent_affinity_id} put wherever a request carries parameters. */
  @Provide
  Arbitrary<byte[]> withInjectedSubagentIds() {
    return Arbitraries.randomValue(r -> {
      ObjectNode body = r.nextBoolean() ? RequestGen.completion(r) : RequestGen.chat(r);
      ObjectNode cp = body.putObject("conversation_params");
      JsonNode injected = r.nextBoolean() ? body.textNode("parent-" + r.nextInt(100)) : RequestGen.value(r, 2);
      if (r.nextBoolean()) {
        cp.set(Json.SUBAGENT_AFFINITY_ID, injected);
        cp.put("conversation_id", "child");
      } else {
        cp.put("conversation_id", "child");
        cp.set(Json.SUBAGENT_AFFINITY_ID, injected);
      }
      if (r.nextBoolean()) {
        body.set(Json.SUBAGENT_AFFINITY_ID, injected);
      }
      if (r.nextBoolean()) {
        ObjectNode dp = RequestGen.disaggregatedParams(r);
        dp.set(Json.SUBAGENT_AFFINITY_ID, injected);
        body.set("disaggregated_params", dp);
      }
      String json = CODEC.toJsonString(body);
      if (r.nextBoolean()) { // a duplicate key after the first one
        json = json.replace("\"conversation_id\":\"child\"",
            "\"conversation_id\":\"child\",\"subagent_affinity_id\":\"dup\"");
      }
      return JsonAssert.utf8(json);
    });
  }

  // ---- helpers ----

  private static void parseEverything(byte[] body) {
    attempt(() -> CODEC.parseCompletionRequest(body));
    attempt(() -> CODEC.parseChatCompletionRequest(body));
    attempt(() -> CODEC.parseCompletionResponse(body));
    attempt(() -> CODEC.parseChatCompletionResponse(body));
    attempt(() -> CODEC.parseCompletionStreamChunk(body));
    attempt(() -> CODEC.parseChatCompletionStreamChunk(body));
    attempt(() -> CODEC.parse(body, DisaggregatedParams.class));
    attempt(() -> CODEC.readTree(body));
  }

  /** Parses; a ProtocolException is fine; whatever parses must serialize and parse back to an equal value. */
  private static void attempt(java.util.function.Supplier<Object> parse) {
    Object value;
    try {
      value = parse.get();
    } catch (ProtocolException e) {
      if (e.status() != 400 && e.status() != 502) {
        throw new AssertionError("unexpected status " + e.status(), e);
      }
      return;
    }
    CODEC.toJsonBytes(value);
  }

  private static <T> void checkNoSubagent(byte[] body, Function<byte[], T> parse,
      Function<T, ConversationParams> params) {
    T parsed;
    try {
      parsed = parse.apply(body);
    } catch (ProtocolException e) {
      return;
    }
    ConversationParams cp = params.apply(parsed);
    if (cp != null) {
      assertNull(cp.subagentAffinityId());
    }
    JsonNode out = CODEC.toTree(parsed);
    assertNull(out.get(Json.SUBAGENT_AFFINITY_ID));
    if (out.get("conversation_params") != null) {
      assertNoKey(out.get("conversation_params"), Json.SUBAGENT_AFFINITY_ID);
    }
    if (out.get("disaggregated_params") != null) {
      assertNull(out.get("disaggregated_params").get(Json.SUBAGENT_AFFINITY_ID));
    }
  }

}
