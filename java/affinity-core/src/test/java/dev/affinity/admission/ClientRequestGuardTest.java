package dev.affinity.admission;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.conversation.ConversationResolver;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.CompletionRequest;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

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

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "\"temperature\": -0.1 | temperature",
      "\"temperature\": 2.01 | temperature",
      "\"top_p\": 0 | top_p",
      "\"top_p\": 1.5 | top_p",
      "\"top_k\": -2 | top_k",
      "\"n\": 0 | n",
      "\"max_tokens\": 0 | max_tokens",
      "\"logprobs\": 6 | logprobs",
      "\"logprobs\": -1 | logprobs",
      "\"conversation_params\": {\"conversation_id\": \"a\\u0001b\"} | conversation_params.conversation_id"})
  void valuesOutsideTheApisRangesAreRefusedNamingTheField(String field, String named) {
    CompletionRequest r = completion("{\"model\": \"m\", \"prompt\": \"hi\", " + field + "}");
    ProtocolException e = assertThrows(ProtocolException.class, () -> ClientRequestGuard.strict().check(r));
    assertEquals(400, e.status());
    assertEquals(named, e.field(), e::getMessage);
  }

  @Test
  void chatRangesNameTheirFields() {
    String base = "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}], ";
    for (String[] c : new String[][] {{"\"max_completion_tokens\": 0", "max_completion_tokens"},
        {"\"logprobs\": true, \"top_logprobs\": 21", "top_logprobs"}, {"\"top_logprobs\": 2", "top_logprobs"}}) {
      ChatCompletionRequest chat = codec.parseChatCompletionRequest((base + c[0] + "}").getBytes(StandardCharsets.UTF_8));
      ProtocolException e = assertThrows(ProtocolException.class, () -> ClientRequestGuard.strict().check(chat), c[0]);
      assertEquals(c[1], e.field(), c[0]);
    }
    ClientRequestGuard.strict().check(codec.parseChatCompletionRequest(
        (base + "\"logprobs\": true, \"top_logprobs\": 20, \"max_completion_tokens\": 1}").getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void aLongBodyConversationIdIsRefusedAsTheHeaderWouldBe() {
    String id = "c".repeat(ConversationResolver.MAX_HEADER_LENGTH + 1);
    CompletionRequest r = completion("{\"model\": \"m\", \"prompt\": \"hi\", \"conversation_params\": "
        + "{\"conversation_id\": \"" + id + "\"}}");
    ProtocolException e = assertThrows(ProtocolException.class, () -> ClientRequestGuard.strict().check(r));
    assertEquals("conversation_params.conversation_id", e.field());
    ClientRequestGuard.strict().check(completion("{\"model\": \"m\", \"prompt\": \"hi\", \"conversation_params\": "
        + "{\"conversation_id\": \"" + id.substring(1) + "\"}}"));
  }

  @Test
  void theEdgesOfEveryRangeAreAccepted() {
    for (String ok : new String[] {"\"temperature\": 0", "\"temperature\": 2", "\"top_p\": 1", "\"top_p\": 0.001",
        "\"top_k\": -1", "\"top_k\": 0", "\"top_k\": 40", "\"n\": 1", "\"max_tokens\": 1", "\"logprobs\": 0",
        "\"logprobs\": 5"}) {
      ClientRequestGuard.strict().check(completion("{\"model\": \"m\", \"prompt\": \"hi\", " + ok + "}"));
    }
  }

  private ChatCompletionRequest chat(String fields) {
    return codec.parseChatCompletionRequest(("{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}]"
        + fields + "}").getBytes(StandardCharsets.UTF_8));
  }

  /** Each field the OpenAI API range- or type-checks is a 400 naming it (issue 31's probe found them accepted). */
  @ParameterizedTest(name = "{0}")
  @CsvSource(delimiter = '|', value = {
      "chat | , \"max_tokens\": 5, \"max_completion_tokens\": -1 | max_completion_tokens",
      "chat | , \"frequency_penalty\": \"lots\" | frequency_penalty",
      "chat | , \"presence_penalty\": 1e308 | presence_penalty",
      "completion | , \"frequency_penalty\": -2.5 | frequency_penalty",
      "completion | , \"min_tokens\": -1 | min_tokens",
      "chat | , \"min_tokens\": 1.5 | min_tokens",
      "chat | , \"logit_bias\": [1] | logit_bias",
      "chat | , \"logit_bias\": {\"a\": 1} | logit_bias",
      "completion | , \"logit_bias\": {\"50256\": -101} | logit_bias",
      "chat | , \"tool_choice\": \"str\" | tool_choice",
      "chat | , \"tool_choice\": {\"type\": \"function\"} | tool_choice.function.name",
      "chat | , \"tools\": [1, \"a\"] | tools[0]",
      "chat | , \"tools\": [{\"function\": {\"name\": \"f\"}}] | tools[0].type",
      "completion | , \"best_of\": 0 | best_of",
      "completion | , \"n\": 3, \"best_of\": 2 | best_of",
      "completion | , \"suffix\": 7 | suffix",
      "completion | , \"detokenize\": \"yes\" | detokenize",
      "completion | , \"cache_salt\": \"s\" | cache_salt"})
  void malformedFieldsAreRefusedNamingThem(String kind, String fields, String field) {
    var request = kind.equals("chat") ? chat(fields)
        : completion("{\"model\": \"m\", \"prompt\": \"hi\"" + fields + "}");
    ProtocolException e = assertThrows(ProtocolException.class, () -> ClientRequestGuard.strict().check(request));
    assertEquals(400, e.status());
    assertEquals(field, e.field(), e.getMessage());
    assertTrue(!e.getMessage().startsWith(field + ": " + field + ":"), "the field is named once: " + e.getMessage());
  }

  @Test
  void aWrongTypeSaysWhatWasExpected() {
    ProtocolException e = assertThrows(ProtocolException.class,
        () -> ClientRequestGuard.strict().check(chat(", \"frequency_penalty\": \"lots\"")));
    assertEquals("frequency_penalty: expected a number but got a string", e.getMessage());
  }

  @ParameterizedTest(name = "role {0}")
  @CsvSource(delimiter = '|', value = {"''", "'\u0000'", "'us er'", "'user\n'", "'1user'"})
  void aRoleMustBeARoleName(String role) {
    String json = "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}, {\"role\": "
        + new com.fasterxml.jackson.databind.node.TextNode(role) + ", \"content\": \"y\"}]}";
    ChatCompletionRequest chat = codec.parseChatCompletionRequest(json.getBytes(StandardCharsets.UTF_8));
    ProtocolException e = assertThrows(ProtocolException.class, () -> ClientRequestGuard.strict().check(chat));
    assertEquals("messages[1].role", e.field(), e.getMessage());
  }

  @Test
  void wellFormedValuesAndCustomRolesPass() {
    ClientRequestGuard g = ClientRequestGuard.strict();
    g.check(chat(", \"frequency_penalty\": 2, \"presence_penalty\": -2, \"min_tokens\": 0, \"logit_bias\": "
        + "{\"50256\": -100, \"1\": 2.5}, \"tool_choice\": \"auto\", \"tools\": [{\"type\": \"function\", "
        + "\"function\": {\"name\": \"f\"}}], \"max_tokens\": 3, \"max_completion_tokens\": 4"));
    g.check(chat(", \"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": \"f\"}}, \"frequency_penalty\": null"));
    g.check(completion("{\"model\": \"m\", \"prompt\": \"hi\", \"best_of\": 2, \"n\": 2, \"suffix\": \"s\", "
        + "\"detokenize\": false}"));
    // upstream accepts custom roles (Llama 3.1's ipython): a role name passes
    g.check(codec.parseChatCompletionRequest(("{\"model\": \"m\", \"messages\": [{\"role\": \"ipython\", "
        + "\"content\": \"x\"}]}").getBytes(StandardCharsets.UTF_8)));
  }

  /** Random roles pass exactly when they are a role name: {@code [A-Za-z][A-Za-z0-9_-]*}, at most 64 characters. */
  @Test
  void rolesPassExactlyWhenTheyMatchTheRoleNamePattern() {
    java.util.Random r = new java.util.Random(7);
    String alphabet = "aZz09_-. /\u00e9\u0000Ab";
    for (int i = 0; i < 3_000; i++) {
      StringBuilder role = new StringBuilder();
      for (int n = r.nextInt(i % 100 == 0 ? 80 : 6); n > 0; n--) {
        role.append(alphabet.charAt(r.nextInt(alphabet.length())));
      }
      String json = "{\"model\": \"m\", \"messages\": [{\"role\": "
          + new com.fasterxml.jackson.databind.node.TextNode(role.toString()) + ", \"content\": \"y\"}]}";
      ChatCompletionRequest chat = codec.parseChatCompletionRequest(json.getBytes(StandardCharsets.UTF_8));
      boolean name = role.length() <= 64 && role.toString().matches("[A-Za-z][A-Za-z0-9_-]*");
      boolean passed;
      try {
        ClientRequestGuard.strict().check(chat);
        passed = true;
      } catch (ProtocolException e) {
        assertEquals("messages[0].role", e.field(), e.getMessage());
        passed = false;
      }
      assertEquals(name, passed, "role \"" + role + "\"");
    }
  }
}
