package dev.affinity.protocol;

import static dev.affinity.protocol.JsonAssert.CODEC;
import static dev.affinity.protocol.JsonAssert.assertEquivalent;
import static dev.affinity.protocol.JsonAssert.tree;
import static dev.affinity.protocol.JsonAssert.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ChatCompletionRequestTest {

  static final String FULL = """
      {"model": "llama-3",
       "messages": [
         {"role": "system", "content": "You are helpful.", "x_sys": {"a": [1, 2.50, null]}},
         {"role": "user", "name": "bob", "content": [
            {"type": "text", "text": "What is in", "cache_control": {"type": "ephemeral"}},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"}},
            {"type": "text", "text": "this image?"}]},
         {"role": "assistant", "content": null, "reasoning_content": "think", "reasoning": "think too",
          "tool_calls": [{"id": "call_1", "type": "function", "x_tc": true,
                          "function": {"name": "lookup", "arguments": "{\\"q\\":1}", "x_fn": 1}}]},
         {"role": "tool", "content": "42", "tool_call_id": "call_1"},
         {"role": "developer", "content": "custom roles pass"}
       ],
       "prompt_token_ids": [1, 2, 3],
       "max_tokens": 64, "max_completion_tokens": 32,
       "temperature": 0.7, "top_p": 0.95, "top_k": 40, "n": 1, "seed": 7,
       "stop": ["\\n\\n", "END"], "stream": true,
       "stream_options": {"include_usage": true, "continuous_usage_stats": true},
       "logprobs": true, "top_logprobs": 5, "echo": false,
       "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}],
       "tool_choice": {"type": "function", "function": {"name": "lookup"}},
       "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}},
       "user": "u-1", "priority": 1.0, "ignore_eos": false,
       "chat_template": "{{ messages }}", "chat_template_kwargs": {"enable_thinking": true},
       "add_generation_prompt": true, "add_special_tokens": false, "cache_salt": "salt",
       "conversation_params": {"conversation_id": "conv-1"},
       "disaggregated_params": {"request_type": "generation_only", "ctx_request_id": 5,
                                "ctx_info_endpoint": ["tcp://a:1", "tcp://b:2"]},
       "frequency_penalty": 0.1, "reasoning_effort": "high", "documents": [{"title": "t", "text": "x"}],
       "thinking": {"type": "enabled"},
       "x_vendor": {"nested": {"deep": [1, {"k": null}]}}, "x_null": null}
      """;

  @Test
  void parsesMessagesAndModelledFields() {
    ChatCompletionRequest r = CODEC.parseChatCompletionRequest(utf8(FULL));
    assertEquals(5, r.messages().size());
    ChatMessage system = r.messages().get(0);
    assertEquals("system", system.role());
    assertEquals(MessageContent.of("You are helpful."), system.content());
    assertEquals(Set.of("x_sys"), system.extra().keySet());

    ChatMessage user = r.messages().get(1);
    assertEquals("bob", user.name());
    MessageContent.Parts parts = assertInstanceOf(MessageContent.Parts.class, user.content());
    assertEquals(3, parts.parts().size());
    assertEquals("image_url", parts.parts().get(1).type());
    assertEquals("low", parts.parts().get(1).extra().get("image_url").get("detail").asText());
    assertEquals("What is in\nthis image?", user.contentText());

    ChatMessage assistant = r.messages().get(2);
    assertSame(MessageContent.ExplicitNull.INSTANCE, assistant.content());
    assertEquals("", assistant.contentText());
    assertEquals("think", assistant.reasoningContent());
    assertEquals("think too", assistant.reasoning());
    ToolCall call = assistant.toolCalls().get(0);
    assertEquals("call_1", call.id());
    assertEquals("lookup", call.function().name());
    assertEquals("{\"q\":1}", call.function().arguments());
    assertEquals(Set.of("x_fn"), call.function().extra().keySet());
    assertEquals("call_1", r.messages().get(3).toolCallId());
    assertEquals("developer", r.messages().get(4).role());

    assertEquals(TokenIds.of(1, 2, 3), r.promptTokenIds());
    assertEquals(64, r.maxTokens());
    assertEquals(32, r.maxCompletionTokens());
    assertEquals(64, r.effectiveMaxTokens().orElseThrow());
    assertEquals(StringOrList.ofList(List.of("\n\n", "END")), r.stop());
    assertEquals(true, r.streamOptions().continuousUsageStats());
    assertEquals(true, r.logprobs());
    assertEquals(5, r.topLogprobs());
    assertTrue(r.tools().isArray());
    assertEquals("lookup", r.toolChoice().get("function").get("name").asText());
    assertEquals(1.0, r.priority());
    assertEquals("{{ messages }}", r.chatTemplate());
    assertTrue(r.chatTemplateKwargs().get("enable_thinking").asBoolean());
    assertEquals(true, r.addGenerationPrompt());
    assertEquals("salt", r.cacheSalt());
    assertEquals(StringOrList.ofList(List.of("tcp://a:1", "tcp://b:2")),
        r.disaggregatedParams().ctxInfoEndpoint());
    assertEquals(Set.of("frequency_penalty", "reasoning_effort", "documents", "thinking", "x_vendor", "x_null"),
        r.extra().keySet());
    assertEquals(List.of("You are helpful.", "What is in\nthis image?", "", "42", "custom roles pass"),
        r.messageTexts());
  }

  @Test
  void roundTripKeepsUnknownFieldsAtEveryLevel() {
    ChatCompletionRequest r = CODEC.parseChatCompletionRequest(utf8(FULL));
    assertEquivalent(tree(FULL), tree(CODEC.toJsonBytes(r)));
  }

  @Test
  void explicitNullContentIsKeptAndAbsentContentStaysAbsent() {
    String body = "{\"model\":\"m\",\"messages\":[{\"role\":\"assistant\",\"content\":null},{\"role\":\"user\"}]}";
    ChatCompletionRequest r = CODEC.parseChatCompletionRequest(utf8(body));
    assertNull(r.messages().get(1).content());
    assertEquals(body, CODEC.toJsonString(r));
  }

  @Test
  void toolChoiceNullIsKept() {
    String body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tool_choice\":null}";
    assertEquals(body, CODEC.toJsonString(CODEC.parseChatCompletionRequest(utf8(body))));
  }

  @Test
  void maxCompletionTokensAloneIsEffective() {
    ChatCompletionRequest r = CODEC.parseChatCompletionRequest(
        utf8("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_completion_tokens\":9}"));
    assertEquals(9, r.effectiveMaxTokens().orElseThrow());
    assertTrue(r.withoutStreaming().toBuilder().maxCompletionTokens(null).build().effectiveMaxTokens().isEmpty());
  }

  @Test
  void forwardedCopies() {
    ChatCompletionRequest client = CODEC.parseChatCompletionRequest(utf8(FULL));

    ChatCompletionRequest ctx = client.withoutStreaming()
        .withDisaggregatedParams(DisaggregatedParams.builder(DisaggRequestType.CONTEXT_ONLY).disaggRequestId(9L).build());
    JsonNode expectedCtx = tree(FULL);
    ((ObjectNode) expectedCtx).put("stream", false);
    ((ObjectNode) expectedCtx).remove("stream_options");
    ((ObjectNode) expectedCtx).set("disaggregated_params",
        tree("{\"request_type\":\"context_only\",\"disagg_request_id\":9}"));
    assertEquivalent(expectedCtx, CODEC.toTree(ctx));

    ChatCompletionRequest gen = client.withPromptTokenIds(TokenIds.of(100, 101))
        .withPromptTokenIdsB64("ZAAAAGUAAAA=")
        .withMessages(List.of(client.messages().get(client.messages().size() - 1)))
        .withConversationParams(null);
    JsonNode out = CODEC.toTree(gen);
    assertEquals("[100,101]", out.get("prompt_token_ids").toString());
    assertEquals("ZAAAAGUAAAA=", out.get("prompt_token_ids_b64").asText());
    assertEquals(1, out.get("messages").size());
    assertNull(out.get("conversation_params"));
    assertEquals(tree(FULL).get("tools"), out.get("tools"));
    assertEquals(tree(FULL).get("documents"), out.get("documents"));
  }

  /** The context-first flow as docs/protocol.md shows it. */
  @Test
  void contextFirstFlowFromTheDocs() {
    ProtocolCodec codec = new ProtocolCodec();
    ChatCompletionRequest req = codec.parseChatCompletionRequest(utf8(FULL));
    long id = 1L << 40;

    ChatCompletionRequest ctxReq = req.withoutStreaming()
        .withDisaggregatedParams(DisaggregatedParams.builder(DisaggRequestType.CONTEXT_ONLY)
            .disaggRequestId(id).scheduleStyle(DisaggScheduleStyle.CONTEXT_FIRST)
            .conversationId(req.conversationId().orElse(null)).build());
    JsonNode ctxJson = codec.toTree(ctxReq);
    assertEquals("context_only", ctxJson.get("disaggregated_params").get("request_type").asText());
    assertEquals("conv-1", ctxJson.get("disaggregated_params").get("conversation_id").asText());
    assertEquals(false, ctxJson.get("stream").asBoolean());

    ChatCompletionResponse ctx = codec.parseChatCompletionResponse(utf8("""
        {"id":"c","object":"chat.completion","created":1,"model":"llama-3",
         "choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"length",
                     "disaggregated_params":{"request_type":"context_only","ctx_request_id":11,
                        "disagg_request_id":1099511627776,"first_gen_tokens":[5],"encoded_opaque_state":"AA==",
                        "x_next_version":{"k":1}}}],
         "usage":{"prompt_tokens":7,"completion_tokens":1,"total_tokens":8,
                  "prompt_tokens_details":{"cached_tokens":4}},
         "prompt_token_ids":[1,2,3,4,5,6,7]}"""));
    DisaggregatedParams handOff = ctx.firstDisaggregatedParams().orElseThrow().toBuilder()
        .requestType(DisaggRequestType.GENERATION_ONLY).ctxUsage(ctx.usage()).build();
    ChatCompletionRequest genReq = req.withDisaggregatedParams(handOff).withPromptTokenIds(ctx.promptTokenIds());
    JsonNode gen = tree(codec.toJsonBytes(genReq));
    assertEquals("generation_only", gen.get("disaggregated_params").get("request_type").asText());
    assertEquals(11, gen.get("disaggregated_params").get("ctx_request_id").asInt());
    assertEquals("{\"k\":1}", gen.get("disaggregated_params").get("x_next_version").toString());
    assertEquals(4, gen.get("disaggregated_params").get("ctx_usage").get("prompt_tokens_details")
        .get("cached_tokens").asInt());
    assertEquals("[1,2,3,4,5,6,7]", gen.get("prompt_token_ids").toString());
    assertEquals(true, gen.get("stream").asBoolean());

    JsonNode forClient = codec.toTree(ctx.withoutDisaggregatedParams());
    JsonAssert.assertNoKey(forClient, "disaggregated_params");
  }

  @Test
  void builderBuildsAMinimalRequest() {
    ChatCompletionRequest r = ChatCompletionRequest.builder("m", List.of(ChatMessage.of("user", "hi")))
        .stream(true).streamOptions(new StreamOptions(true, null)).build();
    assertEquals("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true,"
        + "\"stream_options\":{\"include_usage\":true}}", CODEC.toJsonString(r));
    assertEquals(r, CODEC.parseChatCompletionRequest(CODEC.toJsonBytes(r)));
  }
}
