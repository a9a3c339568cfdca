package dev.affinity.admission;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.anthropic.AnthropicRequests;
import dev.affinity.protocol.FieldRule;
import dev.affinity.protocol.FieldRule.Api;
import dev.affinity.protocol.FieldRule.Type;
import dev.affinity.protocol.FieldRule.Wording;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.protocol.RequestFields;
import dev.affinity.responses.ResponsesRequests;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Reads {@link RequestFields}' table and breaks each rule through every API that carries its field: a body with a
 * value of the wrong type, and one just outside each end of its range, sent through the path a client's body takes
 * (the codec and admission for chat and completions, the conversions for Messages and Responses). Each must answer
 * the 400 the rule itself gives, naming the field; a path that skipped the table would answer otherwise or not at
 * all. The words of each wording are pinned below and, field by field, by the protocol's own error tests.
 */
class RequestFieldsTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final ProtocolCodec CODEC = new ProtocolCodec();
  /** Fields nested in {@code disaggregated_params} rather than at the body's top level. */
  private static final Set<String> DISAGG = Set.of("first_gen_log_probs", "first_gen_logits",
      "context_transceiver_lifecycle");

  static Stream<Arguments> brokenRules() {
    List<Arguments> cases = new ArrayList<>();
    for (FieldRule rule : RequestFields.ALL) {
      for (Api api : rule.apis()) {
        for (JsonNode bad : badValues(rule)) {
          cases.add(Arguments.of(rule.field() + " on " + api + " = " + bad, rule, api, bad));
        }
      }
    }
    return cases.stream();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("brokenRules")
  void everyPathAnswersTheRulesError(String name, FieldRule rule, Api api, JsonNode bad) {
    ProtocolException expected = assertThrows(ProtocolException.class, () -> rule.check(bad));
    ProtocolException got = assertThrows(ProtocolException.class, () -> send(api, body(api, rule.field(), bad)));
    assertEquals(400, got.status());
    assertEquals(rule.field(), got.field().replace("disaggregated_params.", ""));
    assertEquals(expected.detail(), got.detail());
  }

  @Test
  void everyRuleIsReachableAndTheTableHasNoTwinRows() {
    assertFalse(RequestFields.ALL.isEmpty());
    for (FieldRule rule : RequestFields.ALL) {
      assertFalse(rule.apis().isEmpty(), rule.field());
      assertFalse(badValues(rule).isEmpty(), rule.field());
      for (FieldRule other : RequestFields.ALL) {
        if (other != rule && other.field().equals(rule.field())) {
          assertFalse(other.apis().stream().anyMatch(rule.apis()::contains), rule.field() + " has two rules");
        }
      }
    }
  }

  @Test
  void eachWordingKeepsItsWords() {
    assertEquals("number is out of range", detail(() -> RequestFields.TEMPERATURE.check(Double.NaN)));
    assertEquals("must be between 0.0 and 1.0 (got 1.5)", detail(() -> RequestFields.PRIORITY.check(1.5)));
    assertEquals("expected an array but got a string",
        detail(() -> RequestFields.TOOLS.opaque(JSON.getNodeFactory().textNode("x"))));
    assertEquals("frequency_penalty must be in [-2, 2], got 3",
        detail(() -> RequestFields.FREQUENCY_PENALTY.check(JSON.getNodeFactory().numberNode(3))));
    assertEquals("expected true or false but got a number",
        detail(() -> RequestFields.DETOKENIZE.check(JSON.getNodeFactory().numberNode(1))));
    assertEquals("must be a number in (0, 1], got 0",
        detail(() -> RequestFields.MESSAGES_TOP_P.check(JSON.getNodeFactory().numberNode(0))));
    assertEquals("must be an integer >= 1, got 0.5",
        detail(() -> RequestFields.RESPONSES_MAX_OUTPUT_TOKENS.check(JSON.getNodeFactory().numberNode(0.5))));
    assertEquals("must be a boolean, got \"yes\"",
        detail(() -> RequestFields.STREAM.check(JSON.getNodeFactory().textNode("yes"))));
  }

  /** The words each path answered before the table, literally, for one field of each wording and type. */
  @ParameterizedTest(name = "{0} {1}={2}")
  @org.junit.jupiter.params.provider.CsvSource(delimiter = '|', value = {
      "CHAT|tool_choice|3|expected a string or an object but got an integer",
      "CHAT|tools|{}|expected an array but got an object",
      "COMPLETION|priority|1.5|must be between 0.0 and 1.0 (got 1.5)",
      "CHAT|temperature|1e999|number is out of range",
      "CHAT|frequency_penalty|3|frequency_penalty must be in [-2, 2], got 3",
      "COMPLETION|best_of|1.5|expected an integer but got a number",
      "CHAT|parallel_tool_calls|3|expected true or false but got a number",
      "MESSAGES|top_p|0|must be a number in (0, 1], got 0",
      "MESSAGES|top_k|-1|must be an integer >= 0, got -1",
      "MESSAGES|max_tokens|0|must be an integer >= 1, got 0",
      "RESPONSES|temperature|2.5|must be a number in [0, 2], got 2.5",
      "RESPONSES|stream|\"yes\"|must be a boolean, got \"yes\"",
      "COMPLETION|prompt_token_ids|{\"ids\": [1]}|is accepted on chat completions only (TensorRT-LLM models it on chat "
          + "requests): send the token ids of a completion as its prompt, a list of integers",
      "COMPLETION|cache_salt|\"s\"|is accepted on chat completions only (TensorRT-LLM models it on chat requests): "
          + "send the prompt as a chat, or leave cache_salt out",
      "CHAT|return_perf_metrics|\"yes\"|expected true or false but got a string",
      "MESSAGES|metadata|\"u\"|must be an object, got \"u\"",
      "MESSAGES|service_tier|\"priority\"|must be one of auto, standard_only, got \"priority\"",
      "RESPONSES|prompt_cache_key|{}|must be a string, got {}",
      "RESPONSES|include|[[[[[]]]]]|must be an array of strings, got [[[[[]]]]]"})
  void thePathsKeepTheirWords(Api api, String field, String json, String detail) throws Exception {
    ProtocolException e = assertThrows(ProtocolException.class, () -> send(api, body(api, field, JSON.readTree(json))));
    assertEquals(field, e.field());
    assertEquals(detail, e.detail());
  }

  private static String detail(Runnable r) {
    return assertThrows(ProtocolException.class, r::run).detail();
  }

  /** A value of the wrong type, a fraction for an integer, a number past any double, those just outside the range. */
  private static List<JsonNode> badValues(FieldRule rule) {
    var f = JSON.getNodeFactory();
    List<JsonNode> bad = new ArrayList<>();
    if (rule.type() == Type.NONE) {  // refused whatever its type, an explicit null too
      bad.add(f.textNode("1,2"));
      bad.add(f.objectNode().put("ids", 1));
      bad.add(f.numberNode(new java.math.BigDecimal("1e400")));
      bad.add(f.arrayNode().add(1).add(2));
      bad.add(f.nullNode());
      return bad;
    }
    if (rule.type() == Type.STRING_ARRAY) {
      bad.add(JSON.createArrayNode().add(JSON.createArrayNode().add(JSON.createArrayNode().add(
          JSON.createArrayNode().add(JSON.createArrayNode())))));  // [[[[[]]]]]
      bad.add(f.arrayNode().add("x").add(1));
    }
    if (!rule.values().isEmpty()) {
      bad.add(f.textNode("no-such-value"));
    }
    boolean scalarNumber = rule.type() == Type.NUMBER || rule.type() == Type.INTEGER;
    // A modelled number's type is Jackson's to check when the body is read; the rule checks its range.
    if (!(scalarNumber && rule.wording() == Wording.MODELLED)) {
      bad.add(rule.type() == Type.BOOLEAN ? f.textNode("yes") : rule.type() == Type.STRING ? f.numberNode(1)
          : f.booleanNode(true));
    }
    if (!scalarNumber) {
      bad.add(f.numberNode(3));  // a whole number: "a number" in admission's words, "an integer" in the codec's
    }
    if (rule.type() == Type.INTEGER) {
      bad.add(f.numberNode(1.5));
    }
    if (scalarNumber) {
      bad.add(f.numberNode(new java.math.BigDecimal("1e999")));  // no double holds it
    }
    FieldRule.Range range = rule.range();
    if (range != null) {
      bad.add(range.minOpen() ? f.numberNode(range.min()) : f.numberNode(range.min() - 1));
      bad.add(rule.type() == Type.INTEGER ? f.numberNode((long) range.max() + 1) : f.numberNode(range.max() + 0.5));
    }
    return bad;
  }

  private static ObjectNode body(Api api, String field, JsonNode value) {
    ObjectNode body = JSON.createObjectNode().put("model", "m");
    switch (api) {
      case CHAT -> body.putArray("messages").addObject().put("role", "user").put("content", "hi");
      case COMPLETION -> body.put("prompt", "hi");
      case MESSAGES -> body.put("max_tokens", 8).putArray("messages").addObject().put("role", "user")
          .put("content", "hi");
      case RESPONSES -> body.put("input", "hi");
    }
    ObjectNode at = DISAGG.contains(field)
        ? body.putObject("disaggregated_params").put("request_type", "context_only") : body;
    at.set(field, value);
    return body;
  }

  private static void send(Api api, ObjectNode body) throws Exception {
    byte[] bytes = JSON.writeValueAsBytes(body);
    ClientRequestGuard guard = new ClientRequestGuard(true, true);
    switch (api) {
      case CHAT -> guard.check(CODEC.parseChatCompletionRequest(bytes));
      case COMPLETION -> guard.check(CODEC.parseCompletionRequest(bytes));
      case MESSAGES -> guard.check(AnthropicRequests.toChat(bytes, CODEC, false));
      case RESPONSES -> guard.check(ResponsesRequests.toChat(bytes, CODEC).chat());
    }
  }
}
