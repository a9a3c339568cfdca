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
  void withoutATokenizerTheIdsTheClientSentAreUsedAsTheyAre() {
    RequestAdmission a = new RequestAdmission(ClientRequestGuard.strict(), "m"::equals, resolver, PromptTokenizer.CLIENT_IDS);
    HeaderSource none = HeaderSource.of(Map.of());
    AdmittedRequest ids = a.admit(codec.parseCompletionRequest(
        "{\"model\": \"m\", \"prompt\": [5, 6, 7]}".getBytes(StandardCharsets.UTF_8)), none);
    assertArrayEquals(new int[] {5, 6, 7}, ids.promptTokens(), "a token prompt");
    AdmittedRequest chatIds = a.admit(codec.parseChatCompletionRequest(("{\"model\": \"m\", \"messages\": [{\"role\": "
        + "\"user\", \"content\": \"x\"}], \"prompt_token_ids\": [8, 9]}").getBytes(StandardCharsets.UTF_8)), none);
    assertArrayEquals(new int[] {8, 9}, chatIds.promptTokens(), "a chat's prompt_token_ids");
    AdmittedRequest text = a.admit(completion(""), none);
    assertNull(text.promptTokens(), "a text prompt: routers get its text");
    assertTrue(!text.forwardTokens(), "nothing to forward");
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

  @Test
  void aPromptOverTheLimitIsRefusedNamingItsFieldAndTheLimitsSource() {
    PromptLimit limit = new PromptLimit(3, "affinity.max_prompt_tokens");
    RequestAdmission a = new RequestAdmission(ClientRequestGuard.strict(), "m"::equals, resolver, r -> new int[] {1, 2, 3, 4},
        limit);
    RequestRejectedException e = assertThrows(RequestRejectedException.class,
        () -> a.admit(completion(""), HeaderSource.of(Map.of())));
    assertEquals(400, e.status());
    assertEquals("prompt", e.error().error().param());
    assertTrue(e.error().error().message().contains("the prompt has 4 tokens; at most 3 fit (affinity.max_prompt_tokens)"),
        e.error().error().message());
    new RequestAdmission(ClientRequestGuard.strict(), "m"::equals, resolver, r -> new int[] {1, 2, 3}, limit)
        .admit(completion(""), HeaderSource.of(Map.of()));
  }

  /** A tokenizer whose tokens stand for at most {@code perToken} characters, counting the calls that tokenize. */
  private PromptTokenizer bounded(int perToken) {
    return new PromptTokenizer() {
      @Override
      public int[] tokenize(OpenAiRequest request) {
        tokenized.add(request);
        return new int[] {1};
      }

      @Override
      public int maxCharsPerToken(List<String> texts) {
        return perToken;
      }
    };
  }

  @Test
  void aPromptWhoseCharactersAloneExceedTheLimitIsRefusedBeforeTokenizing() {
    PromptLimit limit = new PromptLimit(10, "affinity.max_prompt_tokens");
    RequestAdmission a = new RequestAdmission(ClientRequestGuard.strict(), "m"::equals, resolver, bounded(4), limit);
    // 45 kept characters (49 less the 4 at its edge) over 4 per token: at least 12 tokens, more than 10
    OpenAiRequest big = codec.parseCompletionRequest(("{\"model\": \"m\", \"prompt\": \"" + "x".repeat(49) + "\"}")
        .getBytes(StandardCharsets.UTF_8));
    RequestRejectedException e = assertThrows(RequestRejectedException.class, () -> a.admit(big, HeaderSource.of(Map.of())));
    assertEquals("prompt", e.error().error().param());
    assertTrue(e.error().error().message().contains("at least 12 tokens (45 characters, at most 4 per token"),
        e.error().error().message());
    assertTrue(tokenized.isEmpty(), "refused before tokenizing");
    // 40 kept characters may be 10 tokens: tokenized (1 token) and admitted
    a.admit(codec.parseCompletionRequest(("{\"model\": \"m\", \"prompt\": \"" + "x".repeat(44) + "\"}")
        .getBytes(StandardCharsets.UTF_8)), HeaderSource.of(Map.of()));
    assertEquals(1, tokenized.size());
    // a chat counts what every template keeps: not the assistant's turns (templates may drop earlier reasoning)
    OpenAiRequest chat = codec.parseChatCompletionRequest(("{\"model\": \"m\", \"messages\": [{\"role\": \"assistant\", "
        + "\"content\": \"" + "y".repeat(400) + "\"}, {\"role\": \"user\", \"content\": \"  hi  \"}]}").getBytes(StandardCharsets.UTF_8));
    a.admit(chat, HeaderSource.of(Map.of()));
    OpenAiRequest chatBig = codec.parseChatCompletionRequest(("{\"model\": \"m\", \"messages\": [{\"role\": \"system\", "
        + "\"content\": \"" + "s".repeat(30) + "\"}, {\"role\": \"user\", \"content\": \"" + "u".repeat(30) + "\"}]}")
        .getBytes(StandardCharsets.UTF_8));
    assertEquals("messages", assertThrows(RequestRejectedException.class,
        () -> a.admit(chatBig, HeaderSource.of(Map.of()))).error().error().param());
    // without a bound (0) nothing is refused before tokenizing
    new RequestAdmission(ClientRequestGuard.strict(), "m"::equals, resolver, bounded(0), limit)
        .admit(big, HeaderSource.of(Map.of()));
  }

  @Test
  void idsTheClientSentAreCountedWhenTheFrontendCannotTokenize() {
    PromptLimit limit = new PromptLimit(2, "context_servers.max_seq_len");
    RequestAdmission a = new RequestAdmission(ClientRequestGuard.strict(), "m"::equals, resolver, PromptTokenizer.NONE, limit);
    OpenAiRequest ids = codec.parseCompletionRequest("{\"model\": \"m\", \"prompt\": [1, 2, 3]}".getBytes(StandardCharsets.UTF_8));
    assertEquals("prompt", assertThrows(RequestRejectedException.class, () -> a.admit(ids, HeaderSource.of(Map.of())))
        .error().error().param());
    OpenAiRequest chat = codec.parseChatCompletionRequest(("{\"model\": \"m\", \"messages\": [{\"role\": \"user\", "
        + "\"content\": \"x\"}], \"prompt_token_ids\": [1, 2, 3]}").getBytes(StandardCharsets.UTF_8));
    assertEquals("prompt_token_ids", assertThrows(RequestRejectedException.class,
        () -> a.admit(chat, HeaderSource.of(Map.of()))).error().error().param());
    a.admit(completion(""), HeaderSource.of(Map.of()));  // text the frontend cannot count: the worker's to refuse
  }

  @Test
  void theTighterLimitWins() {
    PromptLimit a = new PromptLimit(10, "a");
    PromptLimit b = new PromptLimit(5, "b");
    assertSame(b, a.min(b));
    assertSame(b, b.min(a));
    assertSame(a, PromptLimit.NONE.min(a));
    assertSame(a, a.min(PromptLimit.NONE));
  }
}
