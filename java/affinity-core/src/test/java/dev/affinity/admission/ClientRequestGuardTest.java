package dev.affinity.admission;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.CompletionRequest;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class ClientRequestGuardTest {
  final ProtocolCodec codec = new ProtocolCodec();

  private CompletionRequest completion(String json) {
    return codec.parseCompletionRequest(json.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void clientDisaggregatedParamsAreRejectedUnlessAllowed() {
    CompletionRequest r = completion("{\"model\": \"m\", \"prompt\": \"hi\", \"disaggregated_params\": "
        + "{\"request_type\": \"generation_only\", \"ctx_request_id\": 5, \"encoded_opaque_state\": \"AAAA\"}}");
    ProtocolException e = assertThrows(ProtocolException.class, () -> ClientRequestGuard.strict().check(r));
    assertEquals(400, e.status());
    assertEquals("disaggregated_params", e.field());
    new ClientRequestGuard(true, false).check(r);
    ClientRequestGuard.strict().check(completion("{\"model\": \"m\", \"prompt\": \"hi\"}"));
  }

  @Test
  void aRequestChatTemplateIsRejectedUnlessAllowed() {
    ChatCompletionRequest chat = codec.parseChatCompletionRequest(("{\"model\": \"m\", \"messages\": [{\"role\": \"user\","
        + " \"content\": \"x\"}], \"chat_template\": \"{{ messages }}\"}").getBytes(StandardCharsets.UTF_8));
    ProtocolException e = assertThrows(ProtocolException.class, () -> ClientRequestGuard.strict().check(chat));
    assertEquals(400, e.status());
    assertEquals("chat_template", e.field());
    new ClientRequestGuard(false, true).check(chat);
    ClientRequestGuard.strict().check(completion("{\"model\": \"m\", \"prompt\": \"hi\"}"));
  }

  @Test
  void theBodyIdComesFromConversationParamsOnly() {
    ChatCompletionRequest chat = codec.parseChatCompletionRequest(("{\"model\": \"m\", \"messages\": [{\"role\": \"user\","
        + " \"content\": \"x\"}], \"conversation_params\": {\"conversation_id\": \"  own  \"}}").getBytes(StandardCharsets.UTF_8));
    assertEquals("own", ClientRequestGuard.bodyConversationId(chat));
    assertNull(ClientRequestGuard.bodyConversationId(completion("{\"model\": \"m\", \"prompt\": \"hi\"}")));
  }
}
