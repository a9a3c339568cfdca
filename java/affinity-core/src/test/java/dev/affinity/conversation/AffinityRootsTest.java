package dev.affinity.conversation;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.AffinitySettings;
import dev.affinity.config.SubagentScope;
import dev.affinity.routing.Fleet;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Nested sub-agents: parent links, the root a chain resolves to, the depth bound and cycles. */
class AffinityRootsTest {
  static final String PARENT = "x-dynamo-parent-session-id";
  static final UUID FIXED = UUID.fromString("00000000-0000-0000-0000-000000000042");

  final AtomicLong now = new AtomicLong(1_000);
  final LocalParentLinks links = new LocalParentLinks(100, 1_000_000, now::get);

  ConversationResolver resolver(int maxDepth) {
    return new ConversationResolver(new ConversationSettings(AffinitySettings.DEFAULT_SESSION_HEADERS,
        List.of(PARENT), SubagentScope.CONTEXT, false), () -> FIXED, new AffinityRoots(links, maxDepth));
  }

  static Resolution request(ConversationResolver r, String own, String parent) {
    return r.resolve(null, HeaderSource.of(parent == null ? Map.of("x-session-id", own)
        : Map.of("x-session-id", own, PARENT, parent)));
  }

  @Test
  void grandchildAndDeeperResolveToTheRoot() {
    ConversationResolver r = resolver(AffinityRoots.DEFAULT_MAX_DEPTH);
    assertNull(request(r, "root", null).affinityId());
    assertEquals("root", request(r, "child", "root").affinityId());
    Resolution grandchild = request(r, "grandchild", "child");
    assertEquals("grandchild", grandchild.conversationId(), "the own id is never rewritten");
    assertEquals("root", grandchild.affinityId());
    assertEquals("root", grandchild.routingKey(Fleet.CONTEXT, SubagentScope.CONTEXT));
    assertEquals("grandchild", grandchild.routingKey(Fleet.GENERATION, SubagentScope.CONTEXT));
    assertEquals("root", request(r, "great-grandchild", "grandchild").affinityId());
    assertEquals("child", links.parentOf("grandchild"));
    assertNull(links.parentOf("root"), "a main agent records no link");
  }

  @Test
  void aOneLevelSubAgentIsResolvedAsBefore() {
    ConversationResolver r = resolver(AffinityRoots.DEFAULT_MAX_DEPTH);
    Resolution child = request(r, "child", "root");
    assertEquals(new Resolution("child", "root", false), child);
  }

  @Test
  void aSynthesizedChildRecordsNoLink() {
    ConversationResolver r = resolver(AffinityRoots.DEFAULT_MAX_DEPTH);
    request(r, "child", "root");
    Resolution anonymous = r.resolve(null, HeaderSource.of(Map.of(PARENT, "child")));
    assertEquals("subagent:" + FIXED, anonymous.conversationId());
    assertEquals("root", anonymous.affinityId());
    assertEquals(1, links.size());
  }

  @Test
  void theDepthBoundStopsAtTheAncestorReachedThere() {
    ConversationResolver r = resolver(2);
    request(r, "a1", "a0");
    request(r, "a2", "a1");
    request(r, "a3", "a2");
    // a4 -> a3 (the parent), then two links: a2, a1; a0 is one link too far
    assertEquals("a1", request(r, "a4", "a3").affinityId());
    assertEquals("a0", resolver(3).resolve(null, HeaderSource.of(Map.of("x-session-id", "a4", PARENT, "a3"))).affinityId());
    assertEquals("a3", resolver(0).resolve(null, HeaderSource.of(Map.of("x-session-id", "a4", PARENT, "a3"))).affinityId(),
        "depth 0 is upstream's one level");
  }

  @Test
  void aLinkThatWouldCloseACycleIsNotRecorded() {
    ConversationResolver r = resolver(AffinityRoots.DEFAULT_MAX_DEPTH);
    request(r, "b", "a");
    request(r, "c", "b");
    // a now claims c as its parent: c -> b -> a would lead back to a
    Resolution a = request(r, "a", "c");
    assertEquals("b", a.affinityId(), "the chain stops before it repeats a");
    assertNull(links.parentOf("a"));
    assertEquals("a", request(r, "d", "c").affinityId(), "the other chains are unchanged");
  }

  @Test
  void aCycleAlreadyInTheLinksIsBroken() {
    // written by two frontends at once: x -> y and y -> x
    links.link("x", "y");
    links.link("y", "x");
    Resolution r = request(resolver(AffinityRoots.DEFAULT_MAX_DEPTH), "z", "x");
    assertEquals("y", r.affinityId());
    assertEquals("x", links.parentOf("z"));
  }

  @Test
  void aSubAgentNamingItselfIsItsOwnRoot() {
    ConversationResolver r = resolver(AffinityRoots.DEFAULT_MAX_DEPTH);
    assertEquals("self", request(r, "self", "self").affinityId());
    assertEquals(0, links.size());
  }

  @Test
  void linksExpireAfterTheirTtlOnTheInjectedClock() {
    ConversationResolver r = resolver(AffinityRoots.DEFAULT_MAX_DEPTH);
    request(r, "child", "root");
    now.addAndGet(999_999);
    assertEquals("root", request(r, "grandchild", "child").affinityId());
    now.addAndGet(1); // child's link is 1,000,000 ns old; grandchild's was written 1 ns ago
    assertEquals("child", request(r, "grandchild2", "child").affinityId());
    assertEquals("child", links.parentOf("grandchild"));
  }

  @Test
  void linksAreBoundedLeastRecentlyWrittenFirst() {
    LocalParentLinks small = new LocalParentLinks(2, 1_000_000, now::get);
    small.link("c1", "p");
    small.link("c2", "p");
    small.link("c1", "q"); // rewritten: now the youngest
    small.link("c3", "p");
    assertEquals(2, small.size());
    assertNull(small.parentOf("c2"));
    assertEquals("q", small.parentOf("c1"));
    assertTrue(small.unlink("c1"));
    assertFalse(small.unlink("c1"));
  }

  @Test
  void underTenantIsolationChainsStayInTheirTenantsNamespace() {
    ConversationResolver r = new ConversationResolver(new ConversationSettings(AffinitySettings.DEFAULT_SESSION_HEADERS,
        List.of(PARENT), SubagentScope.CONTEXT, true), () -> FIXED, new AffinityRoots(links, 16));
    Map<String, String> one = Map.of("authorization", "Bearer one");
    Map<String, String> two = Map.of("authorization", "Bearer two");
    String t1 = ConversationResolver.tenantOf(HeaderSource.of(one));
    String t2 = ConversationResolver.tenantOf(HeaderSource.of(two));
    r.resolve(null, HeaderSource.of(with(one, "x-session-id", "child", PARENT, "root")));
    assertEquals(t1 + "/root", links.parentOf(t1 + "/child"));
    assertEquals(t1 + "/root",
        r.resolve(null, HeaderSource.of(with(one, "x-session-id", "gc", PARENT, "child"))).affinityId());
    // the other tenant naming the same child reaches only its own namespace
    assertEquals(t2 + "/child",
        r.resolve(null, HeaderSource.of(with(two, "x-session-id", "gc", PARENT, "child"))).affinityId());
    assertNull(links.parentOf("child"));
  }

  @Test
  void aMainAgentIsReturnedAsItIs() {
    Resolution main = new Resolution("m", null, false);
    assertSame(main, new AffinityRoots(links, 4).rooted(main));
    assertEquals(0, links.size());
  }

  private static Map<String, String> with(Map<String, String> base, String... kv) {
    Map<String, String> m = new java.util.HashMap<>(base);
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return m;
  }
}
