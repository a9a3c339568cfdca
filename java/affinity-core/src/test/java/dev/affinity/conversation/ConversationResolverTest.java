package dev.affinity.conversation;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.AffinitySettings;
import dev.affinity.config.SubagentScope;
import dev.affinity.routing.Fleet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Table-driven tests of every resolution rule (TensorRT-LLM's tensorrt_llm/serve/conversation_id.py and PR #18684). */
class ConversationResolverTest {
  static final UUID FIXED = UUID.fromString("00000000-0000-0000-0000-000000000042");
  static final String PARENT = "X-Dynamo-Parent-Session-ID";

  static ConversationResolver resolver(boolean feature) {
    return new ConversationResolver(new ConversationSettings(AffinitySettings.DEFAULT_SESSION_HEADERS,
        feature ? Optional.of(PARENT) : Optional.empty(), SubagentScope.CONTEXT), () -> FIXED);
  }

  static Map<String, String> h(String... kv) {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return m;
  }

  /** body id, headers, feature on?, expected own id, expected affinity id. */
  static Stream<Arguments> cases() {
    String syn = "subagent:" + FIXED;
    return Stream.of(
        // each session header on its own, any case
        Arguments.of(null, h("x-claude-code-session-id", "a"), false, "a", null),
        Arguments.of(null, h("X-Claude-Session-Id", "b"), false, "b", null),
        Arguments.of(null, h("X-SESSION-ID", "c"), false, "c", null),
        Arguments.of(null, h("x-correlation-id", "d"), false, "d", null),
        Arguments.of(null, h("X-Session-Affinity", "e"), false, "e", null),
        Arguments.of(null, h("x-multi-turn-session-id", "f"), false, "f", null),
        // order: the configured order wins, not the order the client sent
        Arguments.of(null, h("x-multi-turn-session-id", "late", "x-claude-code-session-id", "early"), false, "early", null),
        Arguments.of(null, h("x-correlation-id", "corr", "x-session-id", "sess"), false, "sess", null),
        // whitespace is stripped; empty and blank values count as absent
        Arguments.of(null, h("x-session-id", "  padded \t".replace("\t", " ")), false, "padded", null),
        Arguments.of(null, h("x-session-id", "", "x-correlation-id", "next"), false, "next", null),
        Arguments.of(null, h("x-session-id", "   ", "x-correlation-id", "next"), false, "next", null),
        Arguments.of(null, h("x-session-id", "   "), false, null, null),
        // not a configured header (Dynamo's unless configured)
        Arguments.of(null, h("x-dynamo-session-id", "dyn"), false, null, null),
        Arguments.of(null, h(), false, null, null),
        // the body wins over headers
        Arguments.of("body", h("x-session-id", "hdr"), false, "body", null),
        Arguments.of("body", h(), true, "body", null),
        // feature off: the parent header is ignored
        Arguments.of(null, h(PARENT, "parent", "x-session-id", "child"), false, "child", null),
        Arguments.of(null, h(PARENT, "parent"), false, null, null),
        // feature on, main agent: exactly as off
        Arguments.of(null, h("x-session-id", "main"), true, "main", null),
        // feature on, sub-agent with its own id (header or body): own id kept, parent is the affinity id
        Arguments.of(null, h(PARENT, "parent", "x-session-id", "child"), true, "child", "parent"),
        Arguments.of("body-child", h(PARENT, "parent", "x-session-id", "hdr"), true, "body-child", "parent"),
        Arguments.of(null, h("x-dynamo-parent-session-id", " parent "), true, syn, "parent"),
        // sub-agent without an own id: synthesized
        Arguments.of(null, h(PARENT, "parent"), true, syn, "parent"),
        // blank parent header counts as absent
        Arguments.of(null, h(PARENT, "  ", "x-session-id", "child"), true, "child", null),
        Arguments.of(null, h(PARENT, ""), true, null, null));
  }

  @ParameterizedTest
  @MethodSource("cases")
  void resolvesOwnAndAffinityIds(String body, Map<String, String> headers, boolean feature, String own, String affinity) {
    Resolution r = resolver(feature).resolve(body, HeaderSource.of(headers));
    assertEquals(own, r.conversationId());
    assertEquals(affinity, r.affinityId());
    assertEquals(own != null && own.startsWith("subagent:") && body == null, r.synthesized());
  }

  @Test
  void synthesizedIdsAreUniquePerRequest() {
    ConversationResolver real = new ConversationResolver(new ConversationSettings(AffinitySettings.DEFAULT_SESSION_HEADERS,
        Optional.of(PARENT), SubagentScope.CONTEXT));
    Resolution a = real.resolve(null, HeaderSource.of(h(PARENT, "p")));
    Resolution b = real.resolve(null, HeaderSource.of(h(PARENT, "p")));
    assertTrue(a.conversationId().startsWith("subagent:"));
    assertFalse(a.conversationId().equals(b.conversationId()));
    assertFalse(a.conversationId().equals("p"), "the child's own id is never the parent's");
  }

  @Test
  void dynamoSessionHeaderCanBeAddedByConfig() {
    List<String> headers = new java.util.ArrayList<>(AffinitySettings.DEFAULT_SESSION_HEADERS);
    headers.add("X-Dynamo-Session-ID");
    ConversationResolver r = new ConversationResolver(new ConversationSettings(headers, Optional.empty(), SubagentScope.CONTEXT));
    assertEquals("dyn", r.resolve(null, HeaderSource.of(h("x-dynamo-session-id", "dyn"))).conversationId());
  }

  /** Every cell of the routing-key table in docs/conversation-routing.md. */
  static Stream<Arguments> routingTable() {
    Resolution main = new Resolution("own", null, false);
    Resolution child = new Resolution("own", "parent", false);
    Resolution none = Resolution.NONE;
    return Stream.of(
        Arguments.of(main, Fleet.CONTEXT, SubagentScope.CONTEXT, "own"),
        Arguments.of(main, Fleet.GENERATION, SubagentScope.CONTEXT, "own"),
        Arguments.of(main, Fleet.CONTEXT, SubagentScope.BOTH, "own"),
        Arguments.of(main, Fleet.GENERATION, SubagentScope.BOTH, "own"),
        Arguments.of(child, Fleet.CONTEXT, SubagentScope.CONTEXT, "parent"),
        Arguments.of(child, Fleet.GENERATION, SubagentScope.CONTEXT, "own"),
        Arguments.of(child, Fleet.CONTEXT, SubagentScope.BOTH, "parent"),
        Arguments.of(child, Fleet.GENERATION, SubagentScope.BOTH, "parent"),
        Arguments.of(none, Fleet.CONTEXT, SubagentScope.CONTEXT, null),
        Arguments.of(none, Fleet.GENERATION, SubagentScope.BOTH, null));
  }

  @ParameterizedTest
  @MethodSource("routingTable")
  void routingKeyPerFleetAndScope(Resolution r, Fleet fleet, SubagentScope scope, String expected) {
    assertEquals(expected, r.routingKey(fleet, scope));
  }

  @Test
  void aBodyIdPlusAParentHeaderRoutesContextByTheParentInBothScopes() {
    Resolution r = resolver(true).resolve("body", HeaderSource.of(h(PARENT, "parent")));
    assertEquals("parent", r.routingKey(Fleet.CONTEXT, SubagentScope.CONTEXT));
    assertEquals("parent", r.routingKey(Fleet.CONTEXT, SubagentScope.BOTH));
    assertEquals("body", r.routingKey(Fleet.GENERATION, SubagentScope.CONTEXT));
  }

  @Test
  void overlongOrControlCharacterHeadersAreRejectedNamingTheHeader() {
    String longValue = "x".repeat(257);
    InvalidHeaderException tooLong = assertThrows(InvalidHeaderException.class,
        () -> resolver(true).resolve(null, HeaderSource.of(h("x-session-id", longValue))));
    assertEquals("x-session-id", tooLong.header());
    assertTrue(tooLong.getMessage().contains("257 characters"));
    resolver(true).resolve(null, HeaderSource.of(h("x-session-id", "x".repeat(256))));  // the limit itself is fine

    InvalidHeaderException ctl = assertThrows(InvalidHeaderException.class,
        () -> resolver(true).resolve(null, HeaderSource.of(h(PARENT, "par\u0001ent"))));
    assertEquals("x-dynamo-parent-session-id", ctl.header());
    assertTrue(ctl.getMessage().contains("control character (0x1) at position 3"), ctl.getMessage());
    assertThrows(InvalidHeaderException.class,
        () -> resolver(false).resolve("body", HeaderSource.of(h("x-correlation-id", "a\nb"))),
        "a bad routing header is rejected even when the body id wins");
    assertNull(resolver(false).resolve(null, HeaderSource.of(h("x-unrelated", "a\nb"))).conversationId(),
        "headers that are not routing headers are not our business");
  }

  @Test
  void tenantIsolationScopesEveryIdToTheKeysTenant() {
    ConversationResolver r = new ConversationResolver(new ConversationSettings(AffinitySettings.DEFAULT_SESSION_HEADERS,
        Optional.of("x-dynamo-parent-session-id"), SubagentScope.CONTEXT, true));
    Resolution a = r.resolve(null, HeaderSource.of(Map.of("authorization", "Bearer key-a", "x-session-id", "s",
        "x-dynamo-parent-session-id", "p")));
    Resolution b = r.resolve(null, HeaderSource.of(Map.of("authorization", "Bearer key-b", "x-session-id", "s",
        "x-dynamo-parent-session-id", "p")));
    assertTrue(a.tenant().matches("t-[0-9a-f]{16}"), a.tenant());
    assertNotEquals(a.tenant(), b.tenant());
    assertEquals(a.tenant() + "/s", a.conversationId());
    assertEquals(a.tenant() + "/p", a.affinityId());
    assertEquals(b.tenant() + "/p", b.routingKey(Fleet.CONTEXT, SubagentScope.CONTEXT), "key B's parent is its own");
    assertEquals(a.tenant(), r.resolve("s", HeaderSource.of(Map.of("authorization", "bearer  key-a"))).tenant(),
        "the scheme is case-insensitive and the key stripped");
    Resolution noIds = r.resolve(null, HeaderSource.of(Map.of("authorization", "Bearer key-a")));
    assertEquals(a.tenant(), noIds.tenant(), "a request without ids still has its tenant (for the salt)");
    assertNull(noIds.conversationId());
    assertEquals("anonymous", r.resolve(null, HeaderSource.of(Map.of())).tenant());
    assertNull(resolver(true).resolve("s", HeaderSource.of(Map.of())).tenant(), "off by default");
  }

  /**
   * The session key is the id resolution takes from the session headers when the body names none, with and without
   * tenant isolation (a session's end names that id, and what is kept under the key goes with it); none when the
   * header that would name it is refused.
   */
  @Test
  void theSessionKeyIsTheConversationIdTheHeadersResolveTo() {
    for (boolean isolation : new boolean[] {false, true}) {
      ConversationSettings settings = new ConversationSettings(AffinitySettings.DEFAULT_SESSION_HEADERS,
          Optional.of("x-dynamo-parent-session-id"), SubagentScope.CONTEXT, isolation);
      ConversationResolver r = new ConversationResolver(settings);
      for (Map<String, String> h : List.of(
          Map.of("authorization", "Bearer key-a", "x-session-id", "  s1 "),
          Map.of("x-correlation-id", "c", "x-claude-code-session-id", " ", "x-session-id", "s2"),
          Map.of("x-dynamo-parent-session-id", "p", "x-session-id", "s3"))) {
        HeaderSource headers = HeaderSource.of(h);
        assertEquals(r.resolve(null, headers).conversationId(), ConversationResolver.sessionKey(settings, headers),
            h.toString());
      }
      assertNull(ConversationResolver.sessionKey(settings, HeaderSource.of(Map.of("x-dynamo-parent-session-id", "p"))));
      assertNull(ConversationResolver.sessionKey(settings, HeaderSource.of(Map.of("x-session-id", "a\u0001b"))));
    }
  }

  /**
   * A sub-agent's parent session key is the session key its parent's own requests have (what the parent's state is kept
   * under), in the same tenant's namespace; none without the header or when its value is refused.
   */
  @Test
  void theParentSessionKeyIsTheKeyOfTheParentsOwnRequests() {
    for (boolean isolation : new boolean[] {false, true}) {
      ConversationSettings settings = new ConversationSettings(AffinitySettings.DEFAULT_SESSION_HEADERS,
          Optional.of("x-dynamo-parent-session-id"), SubagentScope.CONTEXT, isolation);
      HeaderSource parent = HeaderSource.of(Map.of("authorization", "Bearer key-a", "x-session-id", "p1"));
      HeaderSource child = HeaderSource.of(Map.of("authorization", "Bearer key-a", "x-session-id", "c1",
          "x-dynamo-parent-session-id", " p1 "));
      assertEquals(ConversationResolver.sessionKey(settings, parent), ConversationResolver.parentSessionKey(settings, child));
      HeaderSource otherTenant = HeaderSource.of(Map.of("authorization", "Bearer key-b", "x-dynamo-parent-session-id", "p1"));
      if (isolation) {
        assertNotEquals(ConversationResolver.sessionKey(settings, parent),
            ConversationResolver.parentSessionKey(settings, otherTenant));
      }
      assertNull(ConversationResolver.parentSessionKey(settings, parent));
      assertNull(ConversationResolver.parentSessionKey(settings,
          HeaderSource.of(Map.of("x-dynamo-parent-session-id", "a\u0001b"))));
    }
  }
}
