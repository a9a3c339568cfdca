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

import com.fasterxml.jackson.databind.node.TextNode;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class DisaggregatedParamsTest {

  /** Every field of the serve-level DisaggregatedParams (tensorrt_llm/serve/openai_protocol.py) plus v1 lifecycle fields and fields newer than this code. */
  private static final String ALL = """
      {"request_type": "generation_only",
       "first_gen_tokens": [7, 8], "first_gen_log_probs": [[-0.5, null]], "first_gen_logits": [[0.1, 0.2]],
       "ctx_request_id": 1234, "encoded_opaque_state": "b3BhcXVl", "draft_tokens": [9],
       "disagg_request_id": 9223372036854775806, "ctx_dp_rank": 3, "ctx_info_endpoint": "tcp://ctx:5000",
       "schedule_style": 1,
       "ctx_usage": {"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101,
                     "prompt_tokens_details": {"cached_tokens": 64, "x_d": 1}, "x_u": 2},
       "return_prompt_token_ids_b64": true, "resolved_thinking": false, "conversation_id": "conv-1",
       "logical_request_id": 123, "prefill_artifact_id": "0b5ea2a4-5b8f-4f3a-9a43-5a5fb1b36a2e",
       "artifact_version": 0, "handoff_attempt_uuid": "a2c6f4b4-54c0-4fd0-8d8b-6e7d5f0e4a11",
       "consumer_grant_id": "c1", "transfer_session_id": "t1",
       "generation_endpoint_name": "generation-worker-0", "generation_endpoint_rank": 0,
       "generation_endpoint_incarnation": "9d4c3c9e-0a25-4c39-9a8c-0c3f0f6d2d10",
       "context_control_endpoint": "tcp://context-worker-0:5001",
       "context_transceiver_lifecycle": {"protocol_version": 1, "capabilities": ["DIRECT_TRANSFER"],
                                         "backend": "NIXL", "world_size": 8},
       "generation_transceiver_lifecycle": {"protocol_version": 2}, "lease_expiry_ms": 60000,
       "mm_encoder_handles": [{"h": "x"}]}
      """;

  @Test
  void parsesEveryField() {
    DisaggregatedParams p = CODEC.parse(utf8(ALL), DisaggregatedParams.class);
    assertEquals(DisaggRequestType.GENERATION_ONLY, p.requestType());
    assertEquals(TokenIds.of(7, 8), p.firstGenTokens());
    assertEquals("[[-0.5,null]]", p.firstGenLogProbs().toString());
    assertEquals("[[0.1,0.2]]", p.firstGenLogits().toString());
    assertEquals(1234L, p.ctxRequestId());
    assertEquals("b3BhcXVl", p.encodedOpaqueState());
    assertEquals(TokenIds.of(9), p.draftTokens());
    assertEquals(9223372036854775806L, p.disaggRequestId());
    assertEquals(3, p.ctxDpRank());
    assertEquals(StringOrList.of("tcp://ctx:5000"), p.ctxInfoEndpoint());
    assertEquals(DisaggScheduleStyle.GENERATION_FIRST, p.scheduleStyle());
    assertEquals(100, p.ctxUsage().promptTokens());
    assertEquals(64, p.ctxUsage().cachedTokensOrZero());
    assertEquals(true, p.returnPromptTokenIdsB64());
    assertEquals(false, p.resolvedThinking());
    assertEquals("conv-1", p.conversationId());
    assertEquals(123L, p.logicalRequestId());
    assertEquals("0b5ea2a4-5b8f-4f3a-9a43-5a5fb1b36a2e", p.prefillArtifactId());
    assertEquals(0L, p.artifactVersion());
    assertEquals("a2c6f4b4-54c0-4fd0-8d8b-6e7d5f0e4a11", p.handoffAttemptUuid());
    assertEquals("c1", p.consumerGrantId());
    assertEquals("t1", p.transferSessionId());
    assertEquals("generation-worker-0", p.generationEndpointName());
    assertEquals(0, p.generationEndpointRank());
    assertEquals("9d4c3c9e-0a25-4c39-9a8c-0c3f0f6d2d10", p.generationEndpointIncarnation());
    assertEquals("tcp://context-worker-0:5001", p.contextControlEndpoint());
    assertEquals("NIXL", p.contextTransceiverLifecycle().get("backend").asText());
    assertEquals(Set.of("generation_transceiver_lifecycle", "lease_expiry_ms", "mm_encoder_handles"),
        p.extra().keySet());
    assertTrue(p.isAuthProtected());
  }

  @Test
  void unknownLifecycleFieldsSurviveARoundTrip() {
    DisaggregatedParams p = CODEC.parse(utf8(ALL), DisaggregatedParams.class);
    assertEquivalent(tree(ALL), tree(CODEC.toJsonBytes(p)));
  }

  @Test
  void contextResponseParamsAreCopiedVerbatimIntoTheGenerationRequest() {
    DisaggregatedParams fromCtx = CODEC.parse(utf8(ALL), DisaggregatedParams.class).withRequestType(
        DisaggRequestType.CONTEXT_ONLY);
    UsageInfo ctxUsage = new UsageInfo(100, 1, 101, 50);
    DisaggregatedParams gen = fromCtx.toBuilder().requestType(DisaggRequestType.GENERATION_ONLY)
        .scheduleStyle(DisaggScheduleStyle.CONTEXT_FIRST).conversationId("conv-2").ctxUsage(ctxUsage)
        .disaggRequestId(77L).build();
    var expected = (com.fasterxml.jackson.databind.node.ObjectNode) tree(ALL);
    expected.put("request_type", "generation_only").put("schedule_style", 0).put("conversation_id", "conv-2")
        .put("disagg_request_id", 77);
    expected.set("ctx_usage", tree("{\"prompt_tokens\":100,\"completion_tokens\":1,\"total_tokens\":101,"
        + "\"prompt_tokens_details\":{\"cached_tokens\":50}}"));
    assertEquivalent(expected, CODEC.toTree(gen));
    assertEquals(78L, gen.withDisaggRequestId(78L).disaggRequestId());
  }

  @Test
  void ctxInfoEndpointKeepsTheFormThatWasSent() {
    String asString = "{\"request_type\":\"context_only\",\"ctx_info_endpoint\":\"tcp://a:1\"}";
    String asList = "{\"request_type\":\"context_only\",\"ctx_info_endpoint\":[\"tcp://a:1\",\"tcp://b:2\"]}";
    String asOneElementList = "{\"request_type\":\"context_only\",\"ctx_info_endpoint\":[\"tcp://a:1\"]}";
    String asEmptyList = "{\"request_type\":\"context_only\",\"ctx_info_endpoint\":[]}";
    for (String json : List.of(asString, asList, asOneElementList, asEmptyList)) {
      DisaggregatedParams p = CODEC.parse(utf8(json), DisaggregatedParams.class);
      assertEquals(json, CODEC.toJsonString(p));
    }
    DisaggregatedParams single = CODEC.parse(utf8(asString), DisaggregatedParams.class);
    assertTrue(single.ctxInfoEndpoint().single());
    assertEquals("tcp://a:1", single.ctxInfoEndpoint().first());
    DisaggregatedParams list = CODEC.parse(utf8(asList), DisaggregatedParams.class);
    assertFalse(list.ctxInfoEndpoint().single());
    assertEquals(List.of("tcp://a:1", "tcp://b:2"), list.ctxInfoEndpoint().values());
    assertNull(CODEC.parse(utf8(asEmptyList), DisaggregatedParams.class).ctxInfoEndpoint().first());
  }

  @Test
  void requestTypeWireNames() {
    for (DisaggRequestType t : DisaggRequestType.values()) {
      String json = "{\"request_type\":\"" + t.wire() + "\"}";
      assertEquals(t, CODEC.parse(utf8(json), DisaggregatedParams.class).requestType());
      assertEquals(json, CODEC.toJsonString(DisaggregatedParams.builder(t).build()));
    }
    assertEquals("context_and_generation", DisaggRequestType.CONTEXT_AND_GENERATION.wire());
  }

  @Test
  void invalidParamsNameTheField() {
    assertField("disaggregated_params.request_type", "{}");
    assertField("disaggregated_params.request_type", "{\"request_type\":\"prefill\"}");
    assertField("disaggregated_params.request_type", "{\"request_type\":1}");
    assertField("disaggregated_params.schedule_style", "{\"request_type\":\"context_only\",\"schedule_style\":2}");
    assertField("disaggregated_params.schedule_style", "{\"request_type\":\"context_only\",\"schedule_style\":\"0\"}");
    assertField("disaggregated_params.first_gen_tokens[1]",
        "{\"request_type\":\"context_only\",\"first_gen_tokens\":[1,\"2\"]}");
    assertField("disaggregated_params.ctx_info_endpoint[1]",
        "{\"request_type\":\"context_only\",\"ctx_info_endpoint\":[\"a\",3]}");
    assertField("disaggregated_params.ctx_info_endpoint",
        "{\"request_type\":\"context_only\",\"ctx_info_endpoint\":{}}");
    assertField("disaggregated_params.ctx_request_id", "{\"request_type\":\"context_only\",\"ctx_request_id\":\"5\"}");
    assertField("disaggregated_params.ctx_usage.prompt_tokens",
        "{\"request_type\":\"context_only\",\"ctx_usage\":{\"prompt_tokens\":1.5}}");
    assertField("disaggregated_params.context_transceiver_lifecycle",
        "{\"request_type\":\"context_only\",\"context_transceiver_lifecycle\":[1]}");
    ProtocolException e = assertThrows(ProtocolException.class,
        () -> CODEC.parseCompletionRequest(utf8("{\"model\":\"m\",\"prompt\":\"p\",\"disaggregated_params\":"
            + "{\"request_type\":\"prefill\"}}")));
    assertEquals("disaggregated_params.request_type: must be one of context_only, generation_only, "
        + "context_and_generation (got 'prefill')", e.getMessage());
  }

  @Test
  void enumErrorsNameTheValueTheyGot() {
    assertMessage("disaggregated_params.request_type: expected a string but got an integer", "{\"request_type\":1}");
    assertMessage("disaggregated_params.request_type: expected a string but got an object",
        "{\"request_type\":{\"a\":1}}");
    String ctx = "{\"request_type\":\"context_only\",\"schedule_style\":";
    assertMessage("disaggregated_params.schedule_style: expected 0 or 1 but got a string", ctx + "\"0\"}");
    assertMessage("disaggregated_params.schedule_style: expected 0 or 1 but got a number", ctx + "1.0}");
    assertMessage("disaggregated_params.schedule_style: expected 0 or 1 but got an integer", ctx + "4294967296}");
    assertMessage("disaggregated_params.schedule_style: expected 0 or 1 but got an array", ctx + "[0]}");
    assertMessage("disaggregated_params.schedule_style: must be 0 (context first) or 1 (generation first) (got 2)",
        ctx + "2}");
    DisaggregatedParams p = CODEC.parseCompletionRequest(utf8("{\"model\":\"m\",\"prompt\":\"p\","
        + "\"disaggregated_params\":" + ctx + "1}}")).disaggregatedParams();
    assertEquals(DisaggScheduleStyle.GENERATION_FIRST, p.scheduleStyle());
  }

  private static void assertMessage(String message, String params) {
    ProtocolException e = assertThrows(ProtocolException.class, () -> CODEC.parseCompletionRequest(
        utf8("{\"model\":\"m\",\"prompt\":\"p\",\"disaggregated_params\":" + params + "}")));
    assertEquals(message, e.getMessage());
  }

  @Test
  void builderCanCarryFutureFields() {
    DisaggregatedParams p = DisaggregatedParams.builder(DisaggRequestType.CONTEXT_ONLY)
        .putExtra("new_field", TextNode.valueOf("v")).build();
    assertEquals("{\"request_type\":\"context_only\",\"new_field\":\"v\"}", CODEC.toJsonString(p));
    assertEquals("{\"request_type\":\"context_only\"}",
        CODEC.toJsonString(p.toBuilder().removeExtra("new_field").build()));
    assertFalse(p.isAuthProtected());
  }

  private static void assertField(String field, String params) {
    ProtocolException e = assertThrows(ProtocolException.class, () -> CODEC.parseCompletionRequest(
        utf8("{\"model\":\"m\",\"prompt\":\"p\",\"disaggregated_params\":" + params + "}")));
    assertEquals(400, e.status(), e::getMessage);
    assertEquals(field, e.field(), e::getMessage);
  }
}
