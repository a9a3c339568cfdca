package dev.affinity.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Every line of golden/internal_auth_hmac.jsonl (TensorRT-LLM's disagg_auth.py), byte for byte, plus the escaping rules. */
class InternalAuthTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  static List<JsonNode> golden() throws Exception {
    List<JsonNode> out = new ArrayList<>();
    try (var in = InternalAuthTest.class.getResourceAsStream("/golden/internal_auth_hmac.jsonl");
        var r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
      for (String l; (l = r.readLine()) != null; ) {
        if (!l.isBlank()) {
          out.add(JSON.readTree(l));
        }
      }
    }
    return out;
  }

  private static String textOrNull(JsonNode n) {
    return n == null || n.isNull() ? null : n.textValue();
  }

  private static StringOrList endpoint(JsonNode n) {
    if (n == null || n.isNull()) {
      return null;
    }
    if (n.isTextual()) {
      return StringOrList.of(n.textValue());
    }
    List<String> values = new ArrayList<>();
    n.forEach(v -> values.add(v.textValue()));
    return StringOrList.ofList(values);
  }

  /** JSON scalars, objects and arrays as plain Java values (integers as BigInteger). */
  private static Object plain(JsonNode n) {
    if (n.isNull()) {
      return null;
    }
    if (n.isTextual()) {
      return n.textValue();
    }
    if (n.isBoolean()) {
      return n.booleanValue();
    }
    if (n.isIntegralNumber()) {
      return n.bigIntegerValue();
    }
    if (n.isArray()) {
      List<Object> l = new ArrayList<>();
      n.forEach(v -> l.add(plain(v)));
      return l;
    }
    Map<String, Object> m = new LinkedHashMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      m.put(e.getKey(), plain(e.getValue()));
    }
    return m;
  }

  @Test
  void everyGoldenLineMatchesCanonicalBytesAndHeader() throws Exception {
    List<JsonNode> lines = golden();
    int disagg = 0;
    int subagent = 0;
    for (JsonNode line : lines) {
      String where = line.toString();
      InternalAuth auth = new InternalAuth(line.get("key").textValue());
      byte[] canonical = line.get("canonical").textValue().getBytes(StandardCharsets.UTF_8);
      String header = line.get("header").textValue();
      switch (line.get("kind").textValue()) {
        case "disagg" -> {
          disagg++;
          DisaggregatedParams params = DisaggregatedParams.builder(DisaggRequestType.GENERATION_ONLY)
              .encodedOpaqueState(textOrNull(line.get("encoded_opaque_state")))
              .ctxInfoEndpoint(endpoint(line.get("ctx_info_endpoint")))
              .build();
          assertArrayEquals(canonical, InternalAuth.disaggCanonical(params).getBytes(StandardCharsets.UTF_8), where);
          assertEquals(header, auth.signDisagg(params), where);
          assertTrue(auth.verifyDisagg(params, header), where);
          assertFalse(auth.verifyDisagg(params, header.substring(0, header.length() - 1) + "x"), where);
        }
        case "subagent_affinity" -> {
          subagent++;
          JsonNode f = line.get("fields");
          assertArrayEquals(canonical, InternalAuth.canonicalJson(plain(f)).getBytes(StandardCharsets.UTF_8), where);
          SubagentAffinityClaim claim = new SubagentAffinityClaim(f.get("role").textValue(),
              textOrNull(f.get("model")), textOrNull(f.get("conversation_id")),
              f.get("subagent_affinity_id").textValue(), textOrNull(f.get("request_type")),
              f.get("disagg_request_id").isNull() ? null : f.get("disagg_request_id").longValue());
          assertEquals(f.get("purpose").textValue(), InternalAuth.SUBAGENT_AFFINITY_PURPOSE, where);
          assertArrayEquals(canonical, claim.canonicalJson().getBytes(StandardCharsets.UTF_8), where);
          assertEquals(header, auth.signSubagentAffinity(claim), where);
          assertTrue(auth.verifySubagentAffinity(claim, header), where);
          assertFalse(new InternalAuth(line.get("key").textValue() + "!").verifySubagentAffinity(claim, header), where);
        }
        default -> throw new AssertionError("unknown kind in " + where);
      }
    }
    assertEquals(lines.size(), disagg + subagent);
    assertTrue(disagg > 0 && subagent > 0, "both kinds are covered");
  }

  @Test
  void claimFromARequestTakesModelOwnConversationIdTypeAndDisaggId() throws Exception {
    ChatCompletionRequest req = new ProtocolCodec().parseChatCompletionRequest("""
        {"model":"glm-5.2","messages":[{"role":"user","content":"hi"}],
         "conversation_params":{"conversation_id":"child-1"},
         "disaggregated_params":{"request_type":"context_only","disagg_request_id":4328034999294952979}}
        """.getBytes(StandardCharsets.UTF_8));
    SubagentAffinityClaim claim = SubagentAffinityClaim.of(req, InternalAuth.Role.CONTEXT, "parent-42");
    assertEquals(new SubagentAffinityClaim("CONTEXT", "glm-5.2", "child-1", "parent-42", "context_only",
        4328034999294952979L), claim);
    assertEquals("{\"conversation_id\":\"child-1\",\"disagg_request_id\":4328034999294952979,\"model\":\"glm-5.2\","
        + "\"purpose\":\"x-trtllm-subagent-affinity-id\",\"request_type\":\"context_only\",\"role\":\"CONTEXT\","
        + "\"subagent_affinity_id\":\"parent-42\"}", claim.canonicalJson());

    OpenAiRequest bare = req.withDisaggregatedParams(null).withConversationParams(null);
    SubagentAffinityClaim none = SubagentAffinityClaim.of(bare, InternalAuth.Role.GENERATION, "p");
    assertNull(none.conversationId());
    assertNull(none.requestType());
    assertNull(none.disaggRequestId());
    assertTrue(none.canonicalJson().contains("\"disagg_request_id\":null"));
  }

  @Test
  void escapesExactlyAsPythonEnsureAscii() {
    // python3: json.dumps(d, sort_keys=True, separators=(",", ":")) and hmac.new(b"k", s.encode(), sha256)
    String canonical = InternalAuth.disaggCanonical("a\"b\\c/d\n\r\t\b\f\u0000\u001f\u007f\u0080 é", "x\uD83D\uDE00y");
    assertEquals("{\"ctx_info_endpoint\":\"a\\\"b\\\\c/d\\n\\r\\t\\b\\f\\u0000\\u001f\\u007f\\u0080 \\u00e9\","
        + "\"encoded_opaque_state\":\"x\\ud83d\\ude00y\"}", canonical);
    assertEquals("sha256=6287bd160c3e2e926947364a9b67a3aa7ec758e6783b12c111d049f76128bff0",
        new InternalAuth("k").sign(canonical));
  }

  @Test
  void sortsKeysByCodePointAndWritesNestedValues() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("\uD83D\uDE00", 2); // U+1F600 sorts after U+E000 in Python, before it in UTF-16
    m.put("\uE000", 1);
    m.put("d", Map.of("y", -5, "x", new BigInteger("18446744073709551615")));
    m.put("c", List.of(1, "z", false));
    m.put("b", true);
    m.put("a", null);
    String canonical = InternalAuth.canonicalJson(m);
    assertEquals("{\"a\":null,\"b\":true,\"c\":[1,\"z\",false],\"d\":{\"x\":18446744073709551615,\"y\":-5},"
        + "\"\\ue000\":1,\"\\ud83d\\ude00\":2}", canonical);
    assertEquals("sha256=14a59357c1d1e0746f818a4128dc1fab5a3f619c487684391a0836f005135136",
        new InternalAuth("k").sign(canonical));
    assertThrows(IllegalArgumentException.class, () -> InternalAuth.canonicalJson(Map.of("f", 1.5)));
    assertThrows(IllegalArgumentException.class, () -> InternalAuth.canonicalJson(Map.of(1, "x")));
  }

  @Test
  void keysAndProtectionRules() {
    assertEquals(Optional.empty(), InternalAuth.ofNullable(null));
    assertEquals(Optional.empty(), InternalAuth.ofNullable(""));
    assertTrue(InternalAuth.ofNullable(" ").isPresent(), "Python treats only an empty key as missing");
    assertThrows(IllegalArgumentException.class, () -> new InternalAuth(""));
    assertEquals("InternalAuth[key=***]", new InternalAuth("secret").toString());
    assertFalse(new InternalAuth("k").verify("{}", null));

    DisaggregatedParams empty = DisaggregatedParams.builder(DisaggRequestType.GENERATION_ONLY)
        .ctxInfoEndpoint(StringOrList.ofList(List.of())).build();
    assertTrue(empty.isAuthProtected(), "upstream checks `is not None`, so an empty list is protected");
    assertEquals("{\"ctx_info_endpoint\":null,\"encoded_opaque_state\":null}", InternalAuth.disaggCanonical(empty));

    assertEquals(Optional.of(InternalAuth.Role.CONTEXT), InternalAuth.Role.inferredFrom(DisaggRequestType.CONTEXT_ONLY));
    assertEquals(Optional.of(InternalAuth.Role.GENERATION),
        InternalAuth.Role.inferredFrom(DisaggRequestType.GENERATION_ONLY));
    assertEquals(Optional.empty(), InternalAuth.Role.inferredFrom(DisaggRequestType.CONTEXT_AND_GENERATION));
  }
}
