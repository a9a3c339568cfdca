package dev.affinity.protocol;

import static dev.affinity.protocol.JsonAssert.CODEC;
import static dev.affinity.protocol.JsonAssert.assertEquivalent;
import static dev.affinity.protocol.JsonAssert.tree;
import static dev.affinity.protocol.JsonAssert.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import org.junit.jupiter.api.Test;

class CompletionRequestTest {

  private static final String FULL = """
      {"model": "llama-3", "prompt": "Once upon a time",
       "max_tokens": 128, "temperature": 0.7, "top_p": 0.95, "top_k": 40, "n": 1, "seed": 1234567890123,
       "stop": "\\n\\n", "stream": true,
       "stream_options": {"include_usage": true, "continuous_usage_stats": false, "x_opt": [1]},
       "logprobs": 2, "echo": false, "response_format": {"type": "json_object"}, "user": "u-1",
       "priority": 0.25, "ignore_eos": true, "add_special_tokens": false,
       "conversation_params": {"conversation_id": "conv-1"},
       "disaggregated_params": {"request_type": "context_only", "disagg_request_id": 1099511627776,
                                "x_future": {"a": 1}},
       "frequency_penalty": 0.1, "min_tokens": 3, "lora_request": {"lora_name": "a", "lora_int_id": 1},
       "x_vendor": {"nested": {"deep": [1, {"k": null}, 2.50]}}, "x_null": null,
       "x_big": 123456789012345678901234567890, "x_exact": 0.1000000000000000055511151231257827}
      """;

  @Test
  void parsesEveryModelledField() {
    CompletionRequest r = CODEC.parseCompletionRequest(utf8(FULL));
    assertEquals("llama-3", r.model());
    assertEquals(Prompt.text("Once upon a time"), r.prompt());
    assertEquals(128, r.maxTokens());
    assertEquals(0.7, r.temperature());
    assertEquals(0.95, r.topP());
    assertEquals(40, r.topK());
    assertEquals(1, r.n());
    assertEquals(1234567890123L, r.seed());
    assertEquals(StringOrList.of("\n\n"), r.stop());
    assertTrue(r.isStreaming());
    assertEquals(new StreamOptions(true, false, r.streamOptions().extra()), r.streamOptions());
    assertEquals(2, r.logprobs());
    assertEquals(false, r.echo());
    assertEquals("json_object", r.responseFormat().get("type").asText());
    assertEquals("u-1", r.user());
    assertEquals(0.25, r.priority());
    assertEquals(true, r.ignoreEos());
    assertEquals(false, r.addSpecialTokens());
    assertEquals("conv-1", r.conversationParams().conversationId());
    assertEquals(DisaggRequestType.CONTEXT_ONLY, r.disaggregatedParams().requestType());
    assertEquals(1099511627776L, r.disaggregatedParams().disaggRequestId());
    assertEquals(java.util.Set.of("frequency_penalty", "min_tokens", "lora_request", "x_vendor", "x_null", "x_big",
        "x_exact"), r.extra().keySet());
    assertEquals(List.of("x_opt"), List.copyOf(r.streamOptions().extra().keySet()));
  }

  @Test
  void roundTripKeepsUnknownTopLevelAndNestedFields() {
    CompletionRequest r = CODEC.parseCompletionRequest(utf8(FULL));
    byte[] out = CODEC.toJsonBytes(r);
    assertEquivalent(tree(FULL), tree(out));
    // exact decimals and big integers in unmodelled fields are kept digit for digit
    String text = new String(out, java.nio.charset.StandardCharsets.UTF_8);
    assertTrue(text.contains("0.1000000000000000055511151231257827"), text);
    assertTrue(text.contains("123456789012345678901234567890"), text);
    assertTrue(text.contains("2.50"), text);
    assertTrue(text.contains("\"x_null\":null"), text);
    assertFalse(text.contains("\n") || text.contains(": "), "compact output: " + text);
  }

  @Test
  void promptShapes() {
    assertEquals(Prompt.text("hi"), parsePrompt("\"hi\""));
    assertEquals(Prompt.text("hi"), parsePrompt("[\"hi\"]"));
    assertEquals(Prompt.tokens(TokenIds.of(1, 2, 3)), parsePrompt("[1, 2, 3]"));
    assertEquals(Prompt.tokens(TokenIds.of(42)), parsePrompt("[42]"));
    assertEquals(Prompt.tokens(TokenIds.of(4, 5)), parsePrompt("[[4, 5]]"));
    // the unwrapped form is what gets forwarded
    CompletionRequest r = CODEC.parseCompletionRequest(utf8("{\"model\":\"m\",\"prompt\":[\"hi\"]}"));
    assertEquals("{\"model\":\"m\",\"prompt\":\"hi\"}", CODEC.toJsonString(r));
  }

  @Test
  void textAndTokenIdsForTokenization() {
    CompletionRequest text = CODEC.parseCompletionRequest(utf8("{\"model\":\"m\",\"prompt\":\"abc\"}"));
    assertEquals("abc", text.promptText().orElseThrow());
    assertTrue(text.promptTokenIds().isEmpty());
    CompletionRequest ids = CODEC.parseCompletionRequest(utf8("{\"model\":\"m\",\"prompt\":[7,8,9]}"));
    assertTrue(ids.promptText().isEmpty());
    assertEquals(TokenIds.of(7, 8, 9), ids.promptTokenIds().orElseThrow());
    assertEquals(List.of(7, 8, 9), ids.promptTokenIds().orElseThrow().asList());
  }

  @Test
  void contextLegCopy() {
    CompletionRequest client = CODEC.parseCompletionRequest(utf8(FULL));
    DisaggregatedParams ctx = DisaggregatedParams.builder(DisaggRequestType.CONTEXT_ONLY)
        .disaggRequestId(1L << 41).scheduleStyle(DisaggScheduleStyle.CONTEXT_FIRST)
        .conversationId("conv-1").returnPromptTokenIdsB64(true).build();
    CompletionRequest ctxReq = client.withoutStreaming().withDisaggregatedParams(ctx);

    JsonNode expected = tree(FULL);
    ((ObjectNode) expected).put("stream", false);
    ((ObjectNode) expected).remove("stream_options");
    ((ObjectNode) expected).set("disaggregated_params", tree(
        "{\"request_type\":\"context_only\",\"disagg_request_id\":2199023255552,\"schedule_style\":0,"
            + "\"return_prompt_token_ids_b64\":true,\"conversation_id\":\"conv-1\"}"));
    assertEquivalent(expected, CODEC.toTree(ctxReq));
    // the client's object is unchanged
    assertTrue(client.isStreaming());
    assertEquals(DisaggRequestType.CONTEXT_ONLY, client.disaggregatedParams().requestType());
  }

  @Test
  void generationLegCopyReplacesPromptWithTokenIds() {
    CompletionRequest client = CODEC.parseCompletionRequest(utf8(FULL));
    CompletionRequest gen = client.withPromptTokenIds(TokenIds.of(10, 11, 12))
        .withDisaggregatedParams(DisaggregatedParams.builder(DisaggRequestType.GENERATION_ONLY).build())
        .withConversationParams(new ConversationParams("conv-2"));
    JsonNode out = CODEC.toTree(gen);
    assertEquals("[10,11,12]", out.get("prompt").toString());
    assertEquals("generation_only", out.get("disaggregated_params").get("request_type").asText());
    assertEquals("conv-2", out.get("conversation_params").get("conversation_id").asText());
    assertEquals(true, out.get("stream").asBoolean());
    assertEquals(tree(FULL).get("x_vendor"), out.get("x_vendor"));
    assertEquals(5, gen.withMaxTokens(5).maxTokens());
    assertNull(gen.withDisaggregatedParams(null).disaggregatedParams());
  }

  @Test
  void conversationIdPrefersConversationParamsOverLegacyMirror() {
    CompletionRequest r = CODEC.parseCompletionRequest(utf8(
        "{\"model\":\"m\",\"prompt\":\"p\",\"disaggregated_params\":{\"request_type\":\"context_only\","
            + "\"conversation_id\":\"legacy\"}}"));
    assertEquals("legacy", r.conversationId().orElseThrow());
    assertEquals("new", r.withConversationParams(new ConversationParams("new")).conversationId().orElseThrow());
    assertTrue(r.withDisaggregatedParams(null).conversationId().isEmpty());
  }

  @Test
  void explicitNullOnModelledScalarReadsAsAbsent() {
    CompletionRequest r = CODEC.parseCompletionRequest(utf8(
        "{\"model\":\"m\",\"prompt\":\"p\",\"temperature\":null,\"response_format\":null,\"x\":null}"));
    assertNull(r.temperature());
    assertEquals("{\"model\":\"m\",\"prompt\":\"p\",\"response_format\":null,\"x\":null}", CODEC.toJsonString(r));
  }

  @Test
  void immutableAfterParsing() {
    CompletionRequest r = CODEC.parseCompletionRequest(utf8(FULL));
    String before = CODEC.toJsonString(r);
    ((ObjectNode) r.responseFormat()).put("type", "text");
    ((ObjectNode) r.extra().get("x_vendor")).put("injected", 1);
    ((com.fasterxml.jackson.databind.node.ArrayNode) r.streamOptions().extra().get("x_opt")).add(2);
    ((ObjectNode) r.disaggregatedParams().extra().get("x_future")).put("a", 2);
    assertThrows(UnsupportedOperationException.class, () -> r.extra().put("y", IntNode.valueOf(1)));
    assertEquals(before, CODEC.toJsonString(r));
  }

  @Test
  void builderRejectsModelledNameInExtra() {
    CompletionRequest.Builder b = CompletionRequest.builder("m", Prompt.text("p")).putExtra("model", IntNode.valueOf(1));
    assertThrows(IllegalArgumentException.class, b::build);
  }

  @Test
  void equalRequestsAreEqual() {
    assertEquals(CODEC.parseCompletionRequest(utf8(FULL)), CODEC.parseCompletionRequest(utf8(FULL)));
    assertEquals(CODEC.parseCompletionRequest(utf8(FULL)).hashCode(),
        CODEC.parseCompletionRequest(utf8(FULL)).hashCode());
  }

  private static Prompt parsePrompt(String prompt) {
    return CODEC.parseCompletionRequest(utf8("{\"model\":\"m\",\"prompt\":" + prompt + "}")).prompt();
  }
}
