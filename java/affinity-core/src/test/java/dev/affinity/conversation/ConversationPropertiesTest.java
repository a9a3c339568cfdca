package dev.affinity.conversation;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.admission.ClientRequestGuard;
import dev.affinity.config.AffinitySettings;
import dev.affinity.config.SubagentScope;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.routing.Fleet;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Assume;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/** Invariants of conversation and sub-agent resolution, over generated headers and bodies. */
class ConversationPropertiesTest {
  static final String PARENT = "x-dynamo-parent-session-id";
  static final ProtocolCodec CODEC = new ProtocolCodec();

  static ConversationResolver resolver(boolean feature, SubagentScope scope) {
    return new ConversationResolver(new ConversationSettings(AffinitySettings.DEFAULT_SESSION_HEADERS,
        feature ? Optional.of(PARENT) : Optional.empty(), scope), () -> new UUID(7, 7));
  }

  /** Header values a client may legally send: printable, at most 256 characters, sometimes blank. */
  @Provide
  Arbitrary<String> headerValue() {
    return Arbitraries.oneOf(
        Arbitraries.strings().withCharRange(' ', '~').ofMinLength(0).ofMaxLength(40),
        Arbitraries.of("", " ", "   "),
        Arbitraries.strings().alpha().numeric().ofMinLength(1).ofMaxLength(256));
  }

  /** Headers: any of the session headers, the Dynamo session header and noise, in any case. */
  @Provide
  Arbitrary<Map<String, String>> headers() {
    Arbitrary<String> names = Arbitraries.of(
        "x-claude-code-session-id", "X-Claude-Session-Id", "x-session-id", "X-CORRELATION-ID",
        "x-session-affinity", "x-multi-turn-session-id", "x-dynamo-session-id", "x-request-id", "authorization");
    return Combinators.combine(names, headerValue()).as(Map::entry).list().ofMaxSize(6).map(entries -> {
      Map<String, String> m = new LinkedHashMap<>();
      entries.forEach(e -> m.put(e.getKey(), e.getValue()));
      return m;
    });
  }

  @Property(tries = 300)
  void mainAgentRequestsNeverCarryAnAffinityId(@ForAll("headers") Map<String, String> headers,
      @ForAll boolean feature, @ForAll boolean bodyId) {
    for (SubagentScope scope : SubagentScope.values()) {
      Resolution r = resolver(feature, scope).resolve(bodyId ? "body" : null, HeaderSource.of(headers));
      assertNull(r.affinityId());
      assertEquals(r.conversationId(), r.routingKey(Fleet.CONTEXT, scope));
      assertEquals(r.conversationId(), r.routingKey(Fleet.GENERATION, scope));
    }
  }

  @Property(tries = 300)
  void noClientBodyCanSetTheAffinityId(@ForAll("headers") Map<String, String> headers,
      @ForAll("headerValue") String injected, @ForAll boolean inConversationParams, @ForAll boolean inDisaggParams) {
    String body = "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}],"
        + " \"subagent_affinity_id\": " + quote(injected)
        + (inConversationParams ? ", \"conversation_params\": {\"conversation_id\": \"own\", \"subagent_affinity_id\": "
            + quote(injected) + "}" : "")
        + (inDisaggParams ? ", \"disaggregated_params\": {\"request_type\": \"context_only\", \"subagent_affinity_id\": "
            + quote(injected) + "}" : "")
        + "}";
    ChatCompletionRequest req = CODEC.parseChatCompletionRequest(body.getBytes(StandardCharsets.UTF_8));
    if (req.conversationParams() != null) {
      assertNull(req.conversationParams().subagentAffinityId());
    }
    assertTrue(!CODEC.toJsonString(req).contains("subagent_affinity_id"), "never forwarded either");
    Resolution r = resolver(true, SubagentScope.CONTEXT)
        .resolve(ClientRequestGuard.bodyConversationId(req), HeaderSource.of(headers));
    assertNull(r.affinityId(), "only the trusted header sets it");
  }

  @Property(tries = 300)
  void resolutionIsDeterministic(@ForAll("headers") Map<String, String> headers, @ForAll("headerValue") String parent,
      @ForAll boolean withParent, @ForAll boolean feature) {
    Map<String, String> h = new LinkedHashMap<>(headers);
    if (withParent) {
      h.put(PARENT, parent);
    }
    Resolution a = resolver(feature, SubagentScope.BOTH).resolve(null, HeaderSource.of(h));
    Resolution b = resolver(feature, SubagentScope.BOTH).resolve(null, HeaderSource.of(new LinkedHashMap<>(h)));
    assertEquals(a, b);
  }

  @Property(tries = 300)
  void aChildsOwnIdIsNeverItsParents(@ForAll("headers") Map<String, String> headers,
      @ForAll("headerValue") String parent, @ForAll boolean bodyId) {
    Assume.that(!parent.isBlank());
    Assume.that(headers.values().stream().noneMatch(v -> v.strip().equals(parent.strip())));
    Map<String, String> h = new LinkedHashMap<>(headers);
    h.put(PARENT, parent);
    Resolution r = resolver(true, SubagentScope.CONTEXT).resolve(bodyId ? "body-" + parent.hashCode() : null, HeaderSource.of(h));
    assertEquals(parent.strip(), r.affinityId());
    assertNotEquals(r.affinityId(), r.conversationId());
    assertEquals(parent.strip(), r.routingKey(Fleet.CONTEXT, SubagentScope.CONTEXT));
    if (r.synthesized()) {
      assertTrue(r.conversationId().startsWith("subagent:"));
    }
  }

  private static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') {
        b.append('\\');
      }
      b.append(c);
    }
    return b.append('"').toString();
  }
}
