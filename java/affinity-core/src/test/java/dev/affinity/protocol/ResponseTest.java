package dev.affinity.protocol;

import static dev.affinity.protocol.JsonAssert.CODEC;
import static dev.affinity.protocol.JsonAssert.assertEquivalent;
import static dev.affinity.protocol.JsonAssert.assertNoKey;
import static dev.affinity.protocol.JsonAssert.tree;
import static dev.affinity.protocol.JsonAssert.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ResponseTest {

  private static final String CTX_COMPLETION = """
      {"id": "cmpl-1", "object": "text_completion", "created": 1767225600, "model": "llama-3",
       "choices": [{"index": 0, "text": "", "token_ids": [42], "logprobs": null, "finish_reason": "length",
                    "stop_reason": null, "avg_decoded_tokens_per_iter": 1.0,
                    "disaggregated_params": {"request_type": "context_only", "first_gen_tokens": [42],
                       "ctx_request_id": 17, "encoded_opaque_state": "AAEC", "disagg_request_id": 1099511627777,
                       "ctx_dp_rank": 2, "ctx_info_endpoint": ["tcp://ctx:1"], "x_new": 1}}],
       "usage": {"prompt_tokens": 1000, "completion_tokens": 1, "total_tokens": 1001,
                 "prompt_tokens_details": {"cached_tokens": 512}},
       "prompt_token_ids": [1, 2, 3], "x_worker": {"k": "v"}}
      """;

  private static final String CHAT = """
      {"id": "chatcmpl-1", "object": "chat.completion", "created": 1767225600, "model": "llama-3",
       "choices": [{"index": 0,
                    "message": {"role": "assistant", "content": "Hello", "reasoning_content": "hmm",
                                "tool_calls": [], "x_msg": 1},
                    "logprobs": {"content": [{"token": "Hello", "logprob": -0.1, "bytes": [72]}]},
                    "finish_reason": "stop", "stop_reason": 128001, "mm_embedding_handle": null,
                    "disaggregated_params": {"request_type": "context_only", "ctx_request_id": 3}}],
       "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
       "prompt_token_ids": [5, 6], "prompt_token_ids_b64": "BQAAAAYAAAA="}
      """;

  @Test
  void completionResponseRoundTripsAndExposesTheHandOff() {
    CompletionResponse r = CODEC.parseCompletionResponse(utf8(CTX_COMPLETION));
    assertEquivalent(tree(CTX_COMPLETION), tree(CODEC.toJsonBytes(r)));
    assertEquals("cmpl-1", r.id());
    assertEquals("text_completion", r.object());
    assertEquals(1767225600L, r.created());
    assertEquals(TokenIds.of(1, 2, 3), r.promptTokenIds());
    CompletionChoice c = r.firstChoice().orElseThrow();
    assertEquals(0, c.index());
    assertEquals("length", c.finishReason());
    assertEquals(TokenIds.of(42), c.tokenIds());
    DisaggregatedParams p = r.firstDisaggregatedParams().orElseThrow();
    assertEquals(17L, p.ctxRequestId());
    assertEquals(Set.of("x_new"), p.extra().keySet());
    assertEquals(Set.of("avg_decoded_tokens_per_iter"), c.extra().keySet());
    assertEquals(Set.of("x_worker"), r.extra().keySet());
  }

  @Test
  void stripDisaggregatedParamsBeforeAnsweringAClient() {
    CompletionResponse r = CODEC.parseCompletionResponse(utf8(CTX_COMPLETION)).withoutDisaggregatedParams();
    JsonNode expected = tree(CTX_COMPLETION);
    ((ObjectNode) expected.get("choices").get(0)).remove("disaggregated_params");
    assertEquivalent(expected, CODEC.toTree(r));
    assertNoKey(CODEC.toTree(r), "disaggregated_params");
    assertTrue(r.firstDisaggregatedParams().isEmpty());

    ChatCompletionResponse chat = CODEC.parseChatCompletionResponse(utf8(CHAT)).withoutDisaggregatedParams();
    assertNoKey(CODEC.toTree(chat), "disaggregated_params");
    assertEquals("Hello", chat.firstChoice().orElseThrow().message().contentText());
    CompletionStreamResponse chunk = CODEC.parseCompletionStreamChunk(utf8(
        "{\"id\":\"c\",\"choices\":[{\"index\":0,\"text\":\"a\",\"disaggregated_params\":"
            + "{\"request_type\":\"generation_only\"}}]}")).withoutDisaggregatedParams();
    assertNoKey(CODEC.toTree(chunk), "disaggregated_params");
  }

  @Test
  void usageIsRewrittenFromTheContextLeg() {
    UsageInfo gen = new UsageInfo(1000, 200, 1200, 0);
    UsageInfo ctx = new UsageInfo(1010, 1, 1011, 768);
    UsageInfo rewritten = gen.withContextUsage(ctx);
    assertEquals(1010, rewritten.promptTokens());
    assertEquals(200, rewritten.completionTokens());
    assertEquals(1210, rewritten.totalTokens());
    assertEquals(768, rewritten.cachedTokensOrZero());
    assertSame(gen, gen.withContextUsage(null));
    assertSame(gen, gen.withContextUsage(new UsageInfo(null, 1, 1, null)));
    // ctx without details → cached 0; gen without completion_tokens → total = prompt
    UsageInfo noDetails = new UsageInfo(5, null, 5, null).withContextUsage(new UsageInfo(7, 1, 8, null));
    assertEquals("{\"prompt_tokens\":7,\"total_tokens\":7,\"prompt_tokens_details\":{\"cached_tokens\":0}}",
        CODEC.toJsonString(noDetails));

    ChatCompletionResponse chat = CODEC.parseChatCompletionResponse(utf8(CHAT)).withUsageFromContext(ctx);
    assertEquals(1010, chat.usage().promptTokens());
    assertEquals(1015, chat.usage().totalTokens());
    CompletionResponse noUsage = CODEC.parseCompletionResponse(utf8("{\"id\":\"x\",\"choices\":[]}"));
    assertSame(noUsage, noUsage.withUsageFromContext(ctx));
  }

  @Test
  void usageDetailsExtrasAreKeptWhenRewriting() {
    UsageInfo gen = CODEC.parse(utf8("{\"prompt_tokens\":1,\"completion_tokens\":2,\"total_tokens\":3,"
        + "\"prompt_tokens_details\":{\"cached_tokens\":0,\"audio_tokens\":4},\"x\":5}"), UsageInfo.class);
    assertEquals("{\"prompt_tokens\":9,\"completion_tokens\":2,\"total_tokens\":11,"
            + "\"prompt_tokens_details\":{\"cached_tokens\":6,\"audio_tokens\":4},\"x\":5}",
        CODEC.toJsonString(gen.withContextUsage(new UsageInfo(9, 1, 10, 6))));
  }

  @Test
  void chatResponseRoundTrips() {
    ChatCompletionResponse r = CODEC.parseChatCompletionResponse(utf8(CHAT));
    assertEquivalent(tree(CHAT), tree(CODEC.toJsonBytes(r)));
    ChatChoice c = r.firstChoice().orElseThrow();
    assertEquals("assistant", c.message().role());
    assertEquals("hmm", c.message().reasoningContent());
    assertEquals(0, c.message().toolCalls().size());
    assertEquals(128001, c.stopReason().asInt());
    assertEquals(-0.1, c.logprobs().get("content").get(0).get("logprob").asDouble());
    assertEquals("BQAAAAYAAAA=", r.promptTokenIdsB64());
    assertEquals(TokenIds.of(5, 6), r.promptTokenIds());
  }

  @Test
  void streamChunksRoundTrip() {
    String completionChunk = "{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\","
        + "\"choices\":[{\"index\":0,\"text\":\" world\",\"logprobs\":null,\"finish_reason\":null,"
        + "\"stop_reason\":null}],\"x\":[1]}";
    CompletionStreamResponse c = CODEC.parseCompletionStreamChunk(utf8(completionChunk));
    assertEquivalent(tree(completionChunk), tree(CODEC.toJsonBytes(c)));
    assertEquals(" world", c.choices().get(0).text());
    // finish_reason is always written; an explicit "usage": null reads as absent
    assertEquals("{\"choices\":[{\"index\":0,\"finish_reason\":null}]}",
        CODEC.toJsonString(CODEC.parseCompletionStreamChunk(utf8("{\"choices\":[{\"index\":0}],\"usage\":null}"))));

    String chatChunk = """
        {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
         "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi", "reasoning": "r",
                      "reasoning_content": "rc", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                      "function": {"name": "f", "arguments": "{\\""}}], "x_delta": true},
                      "logprobs": null, "finish_reason": null}],
         "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}
        """;
    ChatCompletionStreamResponse s = CODEC.parseChatCompletionStreamChunk(utf8(chatChunk));
    assertEquivalent(tree(chatChunk), tree(CODEC.toJsonBytes(s)));
    ChatDelta d = s.choices().get(0).delta();
    assertEquals("assistant", d.role());
    assertEquals("Hi", d.content());
    assertEquals("r", d.reasoning());
    assertEquals("rc", d.reasoningContent());
    assertEquals(0, d.toolCalls().get(0).index());
    assertEquals("{\"", d.toolCalls().get(0).function().arguments());
    assertEquals(Set.of("x_delta"), d.extra().keySet());
    assertEquals(5, s.withUsageFromContext(new UsageInfo(4, 1, 5, 2)).usage().totalTokens());

    String usageOnly = "{\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[],"
        + "\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,\"total_tokens\":2}}";
    assertEquals(usageOnly, CODEC.toJsonString(CODEC.parseChatCompletionStreamChunk(utf8(usageOnly))));
  }

  @Test
  void workerBodiesThatCannotBeParsedAre502() {
    ProtocolException e = assertThrows(ProtocolException.class,
        () -> CODEC.parseCompletionResponse(utf8("{\"choices\":[{\"index\":\"0\"}]}")));
    assertEquals(502, e.status());
    assertEquals("choices[0].index", e.field());
    assertEquals(502, assertThrows(ProtocolException.class,
        () -> CODEC.parseChatCompletionStreamChunk(utf8("data: {}"))).status());
    assertEquals(502, assertThrows(ProtocolException.class,
        () -> CODEC.parseChatCompletionResponse(utf8("{\"choices\":[{\"message\":{\"content\":\"x\"}}]}"))).status());
  }

  @Test
  void errorResponseShape() {
    assertEquals("{\"error\":{\"message\":\"boom\",\"type\":\"server_error\",\"param\":null,\"code\":500}}",
        CODEC.toJsonString(ErrorResponse.of(500, "boom", null)));
    ProtocolException e = assertThrows(ProtocolException.class,
        () -> CODEC.parseCompletionRequest(utf8("{\"model\":\"m\",\"prompt\":\"p\",\"max_tokens\":\"ten\"}")));
    assertEquals("{\"error\":{\"message\":\"max_tokens: expected an integer but got a string\","
            + "\"type\":\"invalid_request_error\",\"param\":\"max_tokens\",\"code\":400}}",
        CODEC.toJsonString(e.toErrorResponse()));
    assertEquals(e.toErrorResponse(), ErrorResponse.of(e));
    ErrorResponse back = CODEC.parse(CODEC.toJsonBytes(e.toErrorResponse()), ErrorResponse.class);
    assertEquals(e.toErrorResponse(), back);
    assertEquals("not_found_error", ErrorResponse.typeFor(404));
    assertEquals("rate_limit_error", ErrorResponse.typeFor(429));
    assertEquals("service_unavailable_error", ErrorResponse.typeFor(503));
    assertEquals("server_error", ErrorResponse.typeFor(502));
    assertNull(CODEC.parse(utf8("{\"error\":{\"message\":\"m\"}}"), ErrorResponse.class).error().param());
  }
}
