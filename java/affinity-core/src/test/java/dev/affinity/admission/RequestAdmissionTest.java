package dev.affinity.admission;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.AffinitySettings;
import dev.affinity.config.SubagentScope;
import dev.affinity.conversation.ConversationResolver;
import dev.affinity.conversation.ConversationSettings;
import dev.affinity.conversation.HeaderSource;
import dev.affinity.frontend.AdmittedRequest;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.routing.Fleet;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class RequestAdmissionTest {
  static final String PARENT = "X-Dynamo-Parent-Session-ID";
  final ProtocolCodec codec = new ProtocolCodec();
  final List<OpenAiRequest> tokenized = new ArrayList<>();
  final ConversationResolver resolver = new ConversationResolver(new ConversationSettings(AffinitySettings.DEFAULT_SESSION_HEADERS,
      Optional.of(PARENT), SubagentScope.CONTEXT), () -> new UUID(0, 7));

  private RequestAdmission admission(PromptTokenizer tokenizer) {
    return new RequestAdmission(ClientRequestGuard.strict(), "m"::equals, resolver, r -> {
      tokenized.add(r);
      return tokenizer.tokenize(r);
    });
  }

  private OpenAiRequest completion(String extra) {
    return codec.parseCompletionRequest(("{\"model\": \"m\", \"prompt\": \"hi\"" + extra + "}").getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void aGoodRequestIsResolvedAndTokenizedOnce() {
    RequestAdmission a = admission(r -> new int[] {1, 2, 3});
    OpenAiRequest req = completion("");
    HeaderSource headers = HeaderSource.of(Map.of("X-Session-ID", "child", PARENT, "parent"));
    AdmittedRequest admitted = a.admit(req, headers);
    assertSame(req, admitted.request());
    assertSame(headers, admitted.headers());
    assertEquals("child", admitted.resolution().conversationId());
    assertEquals("parent", admitted.resolution().affinityId());
    assertEquals("parent", admitted.resolution().routingKey(Fleet.CONTEXT, SubagentScope.CONTEXT));
    assertArrayEquals(new int[] {1, 2, 3}, admitted.promptTokens());
    assertEquals(1, tokenized.size());
  }

  @Test
  void theBodyConversationIdWinsOverHeaders() {
    AdmittedRequest admitted = admission(PromptTokenizer.NONE).admit(
        completion(", \"conversation_params\": {\"conversation_id\": \"body\"}"), HeaderSource.of(Map.of("X-Session-ID", "hdr")));
    assertEquals("body", admitted.resolution().conversationId());
    assertNull(admitted.promptTokens(), "no tokenizer: routers work from text");
  }

  /** The order of the checks decides which error a request with several problems gets. */
  @Test
  void rejectionsNameTheFieldOrHeaderInOrderGuardModelHeaders() {
    RequestAdmission a = admission(PromptTokenizer.NONE);
    HeaderSource longHeader = HeaderSource.of(Map.of("X-Session-ID", "x".repeat(300)));
    OpenAiRequest internal = codec.parseCompletionRequest(("{\"model\": \"other\", \"prompt\": \"x\", \"disaggregated_params\":"
        + " {\"request_type\": \"generation_only\"}}").getBytes(StandardCharsets.UTF_8));
    RequestRejectedException e1 = assertThrows(RequestRejectedException.class, () -> a.admit(internal, longHeader));
    assertEquals(400, e1.status());
    assertEquals("disaggregated_params", e1.error().error().param());

    OpenAiRequest otherModel = codec.parseCompletionRequest("{\"model\": \"other\", \"prompt\": \"x\"}".getBytes(StandardCharsets.UTF_8));
    RequestRejectedException e2 = assertThrows(RequestRejectedException.class, () -> a.admit(otherModel, longHeader));
    assertEquals(404, e2.status());
    assertEquals("model", e2.error().error().param());
    assertEquals("The model `other` does not exist.", e2.error().error().message());

    RequestRejectedException e3 = assertThrows(RequestRejectedException.class, () -> a.admit(completion(""), longHeader));
    assertEquals(400, e3.status());
    assertEquals("x-session-id", e3.error().error().param());
    assertTrue(tokenized.isEmpty(), "a rejected request is never tokenized");
  }

  @Test
  void aTokenizerProtocolErrorIsARejectionWithItsStatus() {
    RequestAdmission a = admission(r -> {
      throw ProtocolException.invalidField("messages[0].content", "cannot be tokenized");
    });
    RequestRejectedException e = assertThrows(RequestRejectedException.class, () -> a.admit(completion(""), HeaderSource.NONE));
    assertEquals(400, e.status());
    assertEquals("messages[0].content", e.error().error().param());
  }
}
