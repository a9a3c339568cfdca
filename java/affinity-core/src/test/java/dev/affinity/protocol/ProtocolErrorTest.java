package dev.affinity.protocol;

import static dev.affinity.protocol.JsonAssert.CODEC;
import static dev.affinity.protocol.JsonAssert.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class ProtocolErrorTest {

  private static final String MSG = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";

  // ---- malformed JSON ----

  @Test
  void malformedJsonReportsLineColumnAndByteOffset() {
    ProtocolException e = completion("{\"model\":\"m\",\n \"n\": 1,, }");
    assertEquals(400, e.status());
    assertNull(e.field());
    assertEquals(2, e.line());
    assertEquals(9, e.column());
    assertEquals(22, e.byteOffset());
    assertTrue(e.getMessage().startsWith("malformed JSON: Unexpected character (','"), e.getMessage());
    assertTrue(e.getMessage().endsWith("(at line 2, column 9, byte offset 22)"), e.getMessage());
  }

  @Test
  void malformedJsonInsideANestedValueIsStillASyntaxError() {
    ProtocolException e = chat("{\"model\":\"m\",\n\"messages\":[{\"role\":\"user\",\"content\":\"x\",}]}");
    assertNull(e.field());
    assertEquals(2, e.line());
    assertEquals(42, e.column()); // the "}" after the trailing comma
    assertTrue(e.getMessage().startsWith("malformed JSON: "), e.getMessage());
  }

  @Test
  void truncatedBody() {
    ProtocolException e = completion("{\"model\":\"m\",\"prompt\":");
    assertEquals(400, e.status());
    assertTrue(e.getMessage().startsWith("malformed JSON: Unexpected end-of-input"), e.getMessage());
    assertEquals(1, e.line());
  }

  @Test
  void trailingContentIsRejected() {
    ProtocolException e = completion("{\"model\":\"m\",\"prompt\":\"p\"} {}");
    assertEquals(400, e.status());
    assertEquals("malformed JSON: unexpected content after the top-level value (at line 1, column 28, byte offset 27)",
        e.getMessage());
    assertEquals(27, e.byteOffset());
    assertTrue(completion("{\"model\":\"m\",\"prompt\":\"p\"} xyz").getMessage().startsWith("malformed JSON: "));
  }

  @Test
  void emptyAndBlankBodies() {
    assertEquals("body is empty; expected a JSON object", completion("").getMessage());
    assertEquals("body is empty; expected a JSON object", chat(" \r\n\t").getMessage());
    assertEquals(400, assertThrows(ProtocolException.class, () -> CODEC.parseCompletionRequest(null)).status());
  }

  @Test
  void bodyMustBeAnObject() {
    assertEquals("body must be a JSON object but is an array", completion("[1,2]").getMessage());
    assertEquals("body must be a JSON object but is a string", chat("\"hi\"").getMessage());
    assertEquals("body must be a JSON object but is an integer", chat("42").getMessage());
    assertEquals("body must be a JSON object but is null", chat("null").getMessage());
  }

  @Test
  void invalidUtf8() {
    byte[] body = utf8("{\"model\":\"m\",\"prompt\":\"xx\"}");
    body[24] = (byte) 0xC3; // a two-byte lead followed by an ASCII byte
    ProtocolException e = assertThrows(ProtocolException.class, () -> CODEC.parseCompletionRequest(body));
    assertEquals(400, e.status());
    assertTrue(e.getMessage().contains("UTF-8"), e.getMessage());
    assertTrue(e.byteOffset() >= 0);
  }

  // ---- missing required fields ----

  @Test
  void missingRequiredFields() {
    assertError(completion("{\"prompt\":\"p\"}"), "model", "model: required field is missing");
    assertError(completion("{\"model\":\"m\"}"), "prompt", "prompt: required field is missing");
    assertError(completion("{\"model\":\"m\",\"prompt\":null}"), "prompt", "prompt: required field is missing");
    assertError(chat("{" + MSG + "}"), "model", "model: required field is missing");
    assertError(chat("{\"model\":\"m\"}"), "messages", "messages: required field is missing");
    assertError(chat("{\"model\":\"m\",\"messages\":[]}"), "messages",
        "messages: must contain at least one message");
    assertError(chat("{\"model\":\"m\",\"messages\":[{\"role\":\"user\"},{\"role\":\"user\"},{\"role\":\"user\"},"
        + "{\"content\":\"no role\"}]}"), "messages[3].role", "messages[3].role: required field is missing");
    assertError(chat("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
        + "{\"text\":\"b\"}]}]}"), "messages[0].content[1].type", "messages[0].content[1].type: required field is missing");
  }

  // ---- prompt shapes ----

  @Test
  void promptShapes() {
    assertError(completion("{\"model\":\"m\",\"prompt\":[]}"), "prompt", "prompt: must not be empty");
    assertError(completion("{\"model\":\"m\",\"prompt\":[\"a\",\"b\"]}"), "prompt",
        "prompt: multi-prompt batches are not supported; send one prompt (a string or a flat array of token ids) "
            + "per request");
    assertField(completion("{\"model\":\"m\",\"prompt\":[[1,2],[3]]}"), "prompt");
    assertField(completion("{\"model\":\"m\",\"prompt\":[\"a\",1]}"), "prompt");
    assertError(completion("{\"model\":\"m\",\"prompt\":[1,\"a\"]}"), "prompt[1]",
        "prompt[1]: expected an integer token id but got a string");
    assertError(completion("{\"model\":\"m\",\"prompt\":[[1,\"x\"]]}"), "prompt[0][1]",
        "prompt[0][1]: expected an integer token id but got a string");
    assertError(completion("{\"model\":\"m\",\"prompt\":[[]]}"), "prompt[0]", "prompt[0]: must not be empty");
    assertError(completion("{\"model\":\"m\",\"prompt\":[{}]}"), "prompt[0]",
        "prompt[0]: expected a string, an integer token id or an array of token ids but got an object");
    assertError(completion("{\"model\":\"m\",\"prompt\":5}"), "prompt",
        "prompt: expected a string or an array of integer token ids but got an integer");
    assertError(completion("{\"model\":\"m\",\"prompt\":[1,4294967296]}"), "prompt[1]",
        "prompt[1]: token id 4294967296 is out of range (must fit in 32 bits)");
    assertError(completion("{\"model\":\"m\",\"prompt\":[1,2.5]}"), "prompt[1]",
        "prompt[1]: expected an integer token id but got a number with a fraction or exponent");
  }

  // ---- wrong types, with the exact path ----

  static Stream<Arguments> wrongTypes() {
    return Stream.of(
        Arguments.of("{\"model\":\"m\",\"prompt\":\"p\",\"max_tokens\":\"10\"}", "max_tokens",
            "max_tokens: expected an integer but got a string"),
        Arguments.of("{\"model\":\"m\",\"prompt\":\"p\",\"max_tokens\":1.0}", "max_tokens",
            "max_tokens: expected an integer but got a number with a fraction or exponent"),
        Arguments.of("{\"model\":\"m\",\"prompt\":\"p\",\"max_tokens\":3000000000}", "max_tokens",
            "max_tokens: number 3000000000 is out of range for a 32-bit integer"),
        Arguments.of("{\"model\":\"m\",\"prompt\":\"p\",\"seed\":18446744073709551615}", "seed",
            "seed: number 18446744073709551615 is out of range for a 64-bit integer"),
        Arguments.of("{\"model\":\"m\",\"prompt\":\"p\",\"temperature\":\"hot\"}", "temperature",
            "temperature: expected a number but got a string"),
        Arguments.of("{\"model\":\"m\",\"prompt\":\"p\",\"temperature\":1e400}", "temperature",
            "temperature: number is out of range"),
        Arguments.of("{\"model\":\"m\",\"prompt\":\"p\",\"stream\":\"true\"}", "stream",
            "stream: expected a boolean but got a string"),
        Arguments.of("{\"model\":\"m\",\"prompt\":\"p\",\"stream\":1}", "stream",
            "stream: expected a boolean but got an integer"),
        Arguments.of("{\"model\":7,\"prompt\":\"p\"}", "model", "model: expected a string but got an integer"),
        Arguments.of("{\"model\":\"m\",\"prompt\":\"p\",\"stop\":[\"a\",1]}", "stop[1]",
            "stop[1]: expected a string but got an integer"),
        Arguments.of("{\"model\":\"m\",\"prompt\":\"p\",\"stop\":{}}", "stop",
            "stop: expected a string or an array of strings but got an object"),
        Arguments.of("{\"model\":\"m\",\"prompt\":\"p\",\"stream_options\":5}", "stream_options",
            "stream_options: expected an object but got an integer"),
        Arguments.of("{\"model\":\"m\",\"prompt\":\"p\",\"stream_options\":{\"include_usage\":\"yes\"}}",
            "stream_options.include_usage", "stream_options.include_usage: expected a boolean but got a string"),
        Arguments.of("{\"model\":\"m\",\"prompt\":\"p\",\"logprobs\":true}", "logprobs",
            "logprobs: expected an integer but got a boolean"),
        Arguments.of("{\"model\":\"m\",\"prompt\":\"p\",\"response_format\":\"json\"}", "response_format",
            "response_format: expected an object but got a string"),
        Arguments.of("{\"model\":\"m\",\"prompt\":\"p\",\"conversation_params\":[]}", "conversation_params",
            "conversation_params: expected an object but got an array"),
        Arguments.of("{\"model\":\"m\",\"prompt\":\"p\",\"disaggregated_params\":\"ctx\"}", "disaggregated_params",
            "disaggregated_params: expected an object but got a string"));
  }

  @ParameterizedTest
  @MethodSource("wrongTypes")
  void completionWrongTypes(String body, String field, String message) {
    assertError(completion(body), field, message);
  }

  static Stream<Arguments> chatWrongTypes() {
    String m = "{\"model\":\"m\",";
    return Stream.of(
        Arguments.of(m + "\"messages\":\"hi\"}", "messages", "messages: expected an array but got a string"),
        Arguments.of(m + "\"messages\":[5]}", "messages[0]", "messages[0]: expected an object but got an integer"),
        Arguments.of(m + "\"messages\":[null]}", "messages[0]", "messages[0]: expected an object but got null"),
        Arguments.of(m + "\"messages\":[{\"role\":\"user\"},{\"role\":\"user\"},{\"role\":\"user\",\"content\":5}]}",
            "messages[2].content",
            "messages[2].content: expected a string, an array of content parts, or null but got an integer"),
        Arguments.of(m + "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\"},\"x\"]}]}",
            "messages[0].content[1]", "messages[0].content[1]: expected a content part object but got a string"),
        Arguments.of(m + "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":3}]}]}",
            "messages[0].content[0].text", "messages[0].content[0].text: expected a string but got an integer"),
        Arguments.of(m + "\"messages\":[{\"role\":1}]}", "messages[0].role",
            "messages[0].role: expected a string but got an integer"),
        Arguments.of(m + "\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"name\":1}}]}]}",
            "messages[0].tool_calls[0].function.name",
            "messages[0].tool_calls[0].function.name: expected a string but got an integer"),
        Arguments.of(m + "\"messages\":[{\"role\":\"assistant\",\"tool_calls\":{}}]}", "messages[0].tool_calls",
            "messages[0].tool_calls: expected an array but got an object"),
        Arguments.of(m + MSG + ",\"prompt_token_ids\":[1,2,\"3\"]}", "prompt_token_ids[2]",
            "prompt_token_ids[2]: expected an integer token id but got a string"),
        Arguments.of(m + MSG + ",\"prompt_token_ids\":\"1,2\"}", "prompt_token_ids",
            "prompt_token_ids: expected an array of integer token ids but got a string"),
        Arguments.of(m + MSG + ",\"max_completion_tokens\":\"5\"}", "max_completion_tokens",
            "max_completion_tokens: expected an integer but got a string"),
        Arguments.of(m + MSG + ",\"logprobs\":1}", "logprobs", "logprobs: expected a boolean but got an integer"),
        Arguments.of(m + MSG + ",\"top_logprobs\":true}", "top_logprobs",
            "top_logprobs: expected an integer but got a boolean"),
        Arguments.of(m + MSG + ",\"tools\":{}}", "tools", "tools: expected an array but got an object"),
        Arguments.of(m + MSG + ",\"tool_choice\":1}", "tool_choice",
            "tool_choice: expected a string or an object but got an integer"),
        Arguments.of(m + MSG + ",\"chat_template_kwargs\":[]}", "chat_template_kwargs",
            "chat_template_kwargs: expected an object but got an array"),
        Arguments.of(m + MSG + ",\"add_generation_prompt\":\"no\"}", "add_generation_prompt",
            "add_generation_prompt: expected a boolean but got a string"),
        Arguments.of(m + MSG + ",\"top_k\":4.5}", "top_k",
            "top_k: expected an integer but got a number with a fraction or exponent"));
  }

  @ParameterizedTest
  @MethodSource("chatWrongTypes")
  void chatWrongTypes(String body, String field, String message) {
    assertError(chat(body), field, message);
  }

  @Test
  void hugeExponentInAnUnmodelledFieldIsRejectedCleanly() {
    assertError(completion("{\"model\":\"m\",\"prompt\":\"p\",\"x\":{\"y\":1.5e834870539719498390}}"), "x",
        "x: number is out of range");
    ProtocolException e = assertThrows(ProtocolException.class, () -> CODEC.readTree(utf8("[1e99999999999]")));
    assertEquals(400, e.status());
  }

  @Test
  void priorityMustLieInTheUnitInterval() {
    assertError(completion("{\"model\":\"m\",\"prompt\":\"p\",\"priority\":1.5}"), "priority",
        "priority: must be between 0.0 and 1.0 (got 1.5)");
    assertError(chat("{\"model\":\"m\"," + MSG + ",\"priority\":-0.1}"), "priority",
        "priority: must be between 0.0 and 1.0 (got -0.1)");
    assertError(chat("{\"model\":\"m\"," + MSG + ",\"priority\":\"high\"}"), "priority",
        "priority: expected a number but got a string");
    assertEquals(0.0, CODEC.parseChatCompletionRequest(utf8("{\"model\":\"m\"," + MSG + ",\"priority\":0}")).priority());
    assertEquals(1.0, CODEC.parseChatCompletionRequest(utf8("{\"model\":\"m\"," + MSG + ",\"priority\":1}")).priority());
  }

  @Test
  void errorsAreClientReadyBodies() {
    ProtocolException e = chat("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":5}]}");
    ErrorResponse body = e.toErrorResponse();
    assertEquals("invalid_request_error", body.error().type());
    assertEquals("messages[0].content", body.error().param());
    assertEquals(400, body.error().code());
    assertEquals(e.getMessage(), body.error().message());
  }

  private static void assertError(ProtocolException e, String field, String message) {
    assertEquals(400, e.status(), e::getMessage);
    assertEquals(field, e.field(), e::getMessage);
    assertEquals(message, e.getMessage());
  }

  private static void assertField(ProtocolException e, String field) {
    assertEquals(400, e.status(), e::getMessage);
    assertEquals(field, e.field(), e::getMessage);
  }

  private static ProtocolException completion(String body) {
    return assertThrows(ProtocolException.class, () -> CODEC.parseCompletionRequest(utf8(body)));
  }

  private static ProtocolException chat(String body) {
    return assertThrows(ProtocolException.class, () -> CODEC.parseChatCompletionRequest(utf8(body)));
  }
}
