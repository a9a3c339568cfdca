package dev.affinity.protocol;

import static dev.affinity.protocol.JsonAssert.CODEC;
import static dev.affinity.protocol.JsonAssert.assertNoKey;
import static dev.affinity.protocol.JsonAssert.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

class ConversationParamsTest {

  private static final String SUBAGENT = "subagent_affinity_id";

  @Test
  void conversationIdIsStripped() {
    ChatCompletionRequest r = chat("{\"conversation_id\":\"  conv-1 \\t\\n\"}");
    assertEquals("conv-1", r.conversationParams().conversationId());
    assertEquals("{\"conversation_id\":\"conv-1\"}", CODEC.toTree(r).get("conversation_params").toString());
    assertEquals("conv-1", new ConversationParams(" conv-1 ").conversationId());
  }

  @Test
  void numericConversationIdBecomesText() {
    assertEquals("12345", chat("{\"conversation_id\":12345}").conversationParams().conversationId());
  }

  @ParameterizedTest
  @ValueSource(strings = {"{\"conversation_id\":\"\"}", "{\"conversation_id\":\"   \"}", "{\"conversation_id\":null}",
      "{}", "{\"subagent_affinity_id\":\"p\"}"})
  void emptyOrMissingConversationIdIsRejected(String params) {
    ProtocolException e = assertThrows(ProtocolException.class, () -> chat(params));
    assertEquals(400, e.status());
    assertEquals("conversation_params.conversation_id", e.field());
  }

  @Test
  void programmaticBlankIdIsRejected() {
    ProtocolException e = assertThrows(ProtocolException.class, () -> new ConversationParams(" "));
    assertEquals("conversation_id", e.field());
    assertThrows(ProtocolException.class, () -> new ConversationParams(null));
  }

  @Test
  void unknownFieldIsRejected() {
    ProtocolException e = assertThrows(ProtocolException.class,
        () -> chat("{\"conversation_id\":\"c\",\"session\":\"x\"}"));
    assertEquals(400, e.status());
    assertEquals("conversation_params.session", e.field());
    assertEquals("conversation_params.session: unknown field; conversation_params accepts only conversation_id",
        e.getMessage());
  }

  @Test
  void wrongTypesAreRejected() {
    assertEquals("conversation_params.conversation_id",
        assertThrows(ProtocolException.class, () -> chat("{\"conversation_id\":[\"c\"]}")).field());
    assertEquals("conversation_params",
        assertThrows(ProtocolException.class, () -> chat("\"c\"")).field());
  }

  @Test
  void subagentAffinityIdFromAClientBodyIsNeverRead() {
    for (String params : List.of(
        "{\"conversation_id\":\"child\",\"subagent_affinity_id\":\"parent\"}",
        "{\"subagent_affinity_id\":\"parent\",\"conversation_id\":\"child\"}",
        "{\"conversation_id\":\"child\",\"subagent_affinity_id\":{\"nested\":[\"parent\"]}}")) {
      ChatCompletionRequest r = chat(params);
      assertEquals("child", r.conversationParams().conversationId());
      assertNull(r.conversationParams().subagentAffinityId());
      assertEquals("child", r.conversationParams().routingId());
      assertNoKey(CODEC.toTree(r), SUBAGENT);
      assertFalse(CODEC.toJsonString(r).contains("parent"));
    }
  }

  @Test
  void subagentAffinityIdIsDroppedWhereverARequestCarriesParameters() {
    String body = "{\"model\":\"m\",\"prompt\":\"p\",\"subagent_affinity_id\":\"top\","
        + "\"conversation_params\":{\"conversation_id\":\"c\",\"subagent_affinity_id\":\"cp\"},"
        + "\"disaggregated_params\":{\"request_type\":\"context_only\",\"subagent_affinity_id\":\"dp\"}}";
    CompletionRequest r = CODEC.parseCompletionRequest(utf8(body));
    assertFalse(r.extra().containsKey(SUBAGENT));
    assertFalse(r.disaggregatedParams().extra().containsKey(SUBAGENT));
    assertNull(r.conversationParams().subagentAffinityId());
    assertNoKey(CODEC.toTree(r), SUBAGENT);
  }

  @Test
  void serverSetSubagentAffinityIdIsNeverSerialized() {
    ChatCompletionRequest r = chat("{\"conversation_id\":\"child\"}");
    ConversationParams withParent = r.conversationParams().withSubagentAffinityId(" parent ");
    assertEquals("parent", withParent.subagentAffinityId());
    assertEquals("parent", withParent.routingId());
    assertEquals("child", withParent.conversationId());

    ChatCompletionRequest routed = r.withConversationParams(withParent);
    assertEquals("parent", routed.conversationParams().subagentAffinityId());
    String workerJson = CODEC.toJsonString(routed);
    assertFalse(workerJson.contains("parent"), workerJson);
    assertNoKey(CODEC.toTree(routed), SUBAGENT);
    assertEquals("{\"conversation_id\":\"child\"}", CODEC.toJsonString(withParent));
    // and it does not come back through a round trip
    assertNull(CODEC.parseChatCompletionRequest(utf8(workerJson)).conversationParams().subagentAffinityId());
    assertNull(withParent.withSubagentAffinityId(null).subagentAffinityId());
  }

  private static ChatCompletionRequest chat(String conversationParams) {
    return CODEC.parseChatCompletionRequest(utf8("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
        + "\"conversation_params\":" + conversationParams + "}"));
  }
}
