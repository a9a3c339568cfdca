package dev.affinity.routing;

import static dev.affinity.routing.RouterTestSupport.context;
import static dev.affinity.routing.RouterTestSupport.create;
import static dev.affinity.routing.RouterTestSupport.req;
import static dev.affinity.routing.RouterTestSupport.tokens;
import static dev.affinity.routing.RouterTestSupport.worker;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.mockito.Mockito.when;

import dev.affinity.kv.BlockHasher;
import dev.affinity.kv.HashAlgorithm;
import dev.affinity.routing.RouterTestSupport.FakeClock;
import dev.affinity.worker.Worker;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** round_robin, load_balancing, kv_cache_aware and conversation with upstream semantics. */
class UpstreamRoutersTest {
  final FakeClock clock = new FakeClock();

  private static List<String> picks(Router r, int n, Set<String> excluded) {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(r.select(req(i, null), excluded).worker().id());
    }
    return out;
  }

  @Test
  void roundRobinCyclesAndSkipsExcludedAndDeadWorkers() {
    Router r = create("round_robin", Map.of(), context(Fleet.CONTEXT, clock));
    Worker a = worker("a");
    Worker b = worker("b");
    Worker c = worker("c");
    r.addWorker(a);
    r.addWorker(b);
    r.addWorker(c);
    assertEquals(List.of("a", "b", "c", "a"), picks(r, 4, Set.of()));
    assertEquals(List.of("c", "a", "c"), picks(r, 3, Set.of("b")));
    when(a.isAlive()).thenReturn(false);
    assertEquals(List.of("b", "c", "b"), picks(r, 3, Set.of()));
  }

  @Test
  void loadBalancingPicksTheLeastLoadedWithRoundRobinTies() {
    Router r = create("load_balancing", Map.of(), context(Fleet.CONTEXT, clock));
    r.addWorker(worker("a"));
    r.addWorker(worker("b"));
    Selection s1 = r.select(req(1, null), Set.of());
    Selection s2 = r.select(req(2, null), Set.of());
    assertEquals(Set.of("a", "b"), Set.of(s1.worker().id(), s2.worker().id()), "ties alternate");
    s1.release(Outcome.SUCCESS);
    assertEquals(s1.worker().id(), r.select(req(3, null), Set.of()).worker().id(), "the released worker is least loaded");
  }

  @Test
  void loadBalancingCanCountTokens() {
    Router r = create("load_balancing", Map.of("use_tokens", true), context(Fleet.CONTEXT, clock));
    r.addWorker(worker("a"));
    r.addWorker(worker("b"));
    Selection big = r.select(req(1, null, tokens(1000, 0)), Set.of());
    String other = big.worker().id().equals("a") ? "b" : "a";
    // three small requests all go to the other worker: 3 x 10 tokens < 1000
    for (int i = 0; i < 3; i++) {
      assertEquals(other, r.select(req(2 + i, null, tokens(10, 0)), Set.of()).worker().id());
    }
  }

  /** Indexes the first {@code blocks} blocks of {@code prompt} at the worker. */
  private static void hold(Router r, String worker, int[] prompt, int blocks) {
    long[] keys = new BlockHasher(HashAlgorithm.V1_BLOCK_KEY, 4).keys(prompt, null);
    AbstractRouter ar = (AbstractRouter) r;
    ar.index.store(ar.index.location(worker, -1), keys, 0, blocks);
  }

  @Test
  void kvCacheAwareScoresAreMatchedBlocksMinusWeightedLoad() {
    int[] prompt = tokens(33, 0);  // 32 usable tokens = 8 blocks of 4
    // A holds 3 blocks and has 2 active requests; B holds nothing and is idle.
    for (double weight : new double[] {0.25, 2.0}) {
      Router r = create("kv_cache_aware", Map.of("load_weight", weight), context(Fleet.CONTEXT, clock));
      r.addWorker(worker("a"));
      r.addWorker(worker("b"));
      hold(r, "a", prompt, 3);
      r.select(req(100, null, tokens(8, 900)), Set.of("b"));
      r.select(req(101, null, tokens(8, 900)), Set.of("b"));
      Selection s = r.select(req(1, null, prompt), Set.of());
      // 0.25: A = 3 - 0.5 = 2.5 > B = 0; 2.0: A = 3 - 4 = -1 < B = 0
      assertEquals(weight == 0.25 ? "a" : "b", s.worker().id(), "load_weight " + weight);
      assertEquals(weight == 0.25 ? 3 : 0, s.matchedBlocks());
    }
  }

  @Test
  void kvCacheAwareLoadCapExcludesBusyWorkers() {
    int[] prompt = tokens(33, 0);
    Router r = create("kv_cache_aware", Map.of("max_batch_size", 4, "load_cap", 0.5), context(Fleet.CONTEXT, clock));
    r.addWorker(worker("a"));
    r.addWorker(worker("b"));
    hold(r, "a", prompt, 8);
    r.select(req(100, null, tokens(8, 900)), Set.of("b"));
    assertEquals("a", r.select(req(1, null, prompt), Set.of()).worker().id(), "1/4 < 0.5");
    assertEquals("b", r.select(req(2, null, prompt), Set.of()).worker().id(), "a has 2/4 >= 0.5: capped");
  }

  @Test
  void kvCacheAwareContentPinKeepsAConversationInPlace() {
    Router r = create("kv_cache_aware", Map.of(), context(Fleet.CONTEXT, clock));
    r.addWorker(worker("a"));
    r.addWorker(worker("b"));
    int[] prompt = tokens(33, 0);
    RoutingRequest first = RoutingRequest.builder(1, Fleet.CONTEXT).tokens(prompt).contentKey(42L).build();
    String home = r.select(first, Set.of()).worker().id();
    hold(r, home.equals("a") ? "b" : "a", prompt, 8);  // eviction moved the prefix elsewhere
    RoutingRequest next = RoutingRequest.builder(2, Fleet.CONTEXT).tokens(prompt).contentKey(42L).build();
    Selection s = r.select(next, Set.of());
    assertEquals(home, s.worker().id());
    assertEquals(DecisionReason.CONTENT_PIN, s.reason());
  }

  @Test
  void kvCacheAwareBackfillsRoutedBlocksAfterSuccessOnly() {
    Router r = create("kv_cache_aware", Map.of(), context(Fleet.CONTEXT, clock));
    r.addWorker(worker("a"));
    r.addWorker(worker("b"));
    int[] prompt = tokens(33, 0);
    Selection failed = r.select(req(1, null, prompt), Set.of());
    failed.release(Outcome.FAILURE);
    Selection s = r.select(req(2, null, prompt), Set.of());
    assertEquals(0, s.matchedBlocks(), "a failure backfills nothing");
    s.release(Outcome.SUCCESS);
    Selection again = r.select(req(3, null, prompt), Set.of());
    assertEquals(s.worker().id(), again.worker().id());
    assertEquals(8, again.matchedBlocks());
    assertEquals(DecisionReason.PREFIX, again.reason());
  }

  @Test
  void kvCacheAwareHashesEachWorkerWithItsOwnBlockSize() {
    Router r = create("kv_cache_aware", Map.of("tokens_per_block", 32), context(Fleet.CONTEXT, clock));
    Worker a = worker("a", 8, false, 1, 64);
    r.addWorker(a);
    int[] prompt = tokens(33, 0);
    AbstractRouter ar = (AbstractRouter) r;
    ar.index.store(ar.index.location("a", -1), new BlockHasher(HashAlgorithm.V1_BLOCK_KEY, 8).keys(prompt, null));
    assertEquals(4, r.select(req(1, null, prompt), Set.of()).matchedBlocks(), "the worker's 8-token blocks");
  }

  @Test
  void conversationIsStickyAndRepinsOnRemovalExclusionAndDeath() {
    ConversationRouter r = (ConversationRouter) create("conversation", Map.of(), context(Fleet.CONTEXT, clock));
    Worker a = worker("a");
    Worker b = worker("b");
    Worker c = worker("c");
    r.addWorker(a);
    r.addWorker(b);
    r.addWorker(c);
    Selection first = r.select(req(1, "conv"), Set.of());
    assertEquals(DecisionReason.NEW_PIN, first.reason());
    String home = first.worker().id();
    for (int i = 0; i < 5; i++) {
      Selection s = r.select(req(2 + i, "conv"), Set.of());
      assertEquals(home, s.worker().id(), "sticky, whatever the load");
      assertEquals(DecisionReason.PINNED, s.reason());
    }
    Selection excluded = r.select(req(10, "conv"), Set.of(home));
    assertEquals(DecisionReason.RE_PINNED, excluded.reason());
    String second = excluded.worker().id();
    assertEquals(second, r.select(req(11, "conv"), Set.of()).worker().id(), "the re-pin sticks");
    r.removeWorker(second);
    assertNull(r.boundTo("conv"), "a removed worker's sessions are evicted");
    Selection afterRemoval = r.select(req(12, "conv"), Set.of());
    assertEquals(DecisionReason.NEW_PIN, afterRemoval.reason());
    Worker third = afterRemoval.worker();
    when(third.isAlive()).thenReturn(false);
    Selection afterDeath = r.select(req(13, "conv"), Set.of());
    assertEquals(DecisionReason.RE_PINNED, afterDeath.reason());
    assertEquals(false, afterDeath.worker().id().equals(third.id()));
  }

  @Test
  void conversationSoftPlacementIsAnOptionOffByDefault() {
    Map<String, Object> on = Map.of("soft_placement_margin", 0.5);
    for (Map<String, Object> args : List.of(Map.<String, Object>of(), on)) {
      ConversationRouter r = (ConversationRouter) create("conversation", args, context(Fleet.CONTEXT, clock));
      r.addWorker(worker("a"));
      r.addWorker(worker("b"));
      Selection root = r.select(req(1, "root", tokens(64, 0)), Set.of());
      String home = root.worker().id();
      // 2000 tokens of content on the root's worker (still in flight)
      Selection busy = r.select(req(2, "other", tokens(2000, 10_000)), Set.of(home.equals("a") ? "b" : "a"));
      Selection sub = r.select(AffinityRouterTest.subagent(3, "sub-1", "root", tokens(1000, 50_000)), Set.of());
      if (args.isEmpty()) {
        assertEquals(DecisionReason.PINNED, sub.reason(), "upstream: the root's binding, whatever the load");
        assertEquals(home, sub.worker().id());
        assertNull(r.boundTo("sub-1"));
      } else {
        assertEquals(DecisionReason.NEW_PIN, sub.reason(), "the root's worker is 2000 > 0.5 x 1000 tokens busier");
        assertEquals(false, sub.worker().id().equals(home));
        assertEquals(sub.candidate(), r.boundTo("sub-1"));
        Selection later = r.select(AffinityRouterTest.subagent(4, "sub-1", "root", tokens(1000, 50_000)), Set.of());
        assertEquals(DecisionReason.PINNED, later.reason(), "later turns follow the own binding");
        assertEquals(sub.worker().id(), later.worker().id());
      }
      busy.release(Outcome.SUCCESS);
    }
  }

  @Test
  void conversationHandlesAPromptOfAMillionTokensWithoutDeepRecursion() {
    // 1.25M tokens in 4-token blocks: a 312,500-node path in the session trie. Replacing and
    // evicting it once recursed per block and overflowed the stack.
    ConversationRouter r = (ConversationRouter) create("conversation", Map.of("tokens_per_block", 4, "max_sessions", 1),
        context(Fleet.CONTEXT, clock));
    r.addWorker(worker("a"));
    r.addWorker(worker("b"));
    int[] turn = tokens(1_250_000, 0);
    Selection first = r.select(req(1, null, turn), Set.of());
    int[] next = Arrays.copyOf(turn, turn.length + 64);  // the next turn extends it: matched, its path replaced
    Selection again = r.select(req(2, null, next), Set.of());
    assertEquals(DecisionReason.IMPLICIT_MATCH, again.reason());
    assertEquals(first.worker().id(), again.worker().id());
    r.select(req(3, null, tokens(1_250_000, 7)), Set.of());  // a new session evicts it (max_sessions 1)
    assertEquals(1, r.sessionCount());
  }

  @Test
  void conversationEvictsTheLeastRecentlyUsedSessionAtMaxSessions() {
    ConversationRouter r = (ConversationRouter) create("conversation", Map.of("max_sessions", 2), context(Fleet.CONTEXT, clock));
    r.addWorker(worker("a"));
    r.addWorker(worker("b"));
    r.select(req(1, "one"), Set.of());
    r.select(req(2, "two"), Set.of());
    r.select(req(3, "one"), Set.of());  // one is now the most recent
    r.select(req(4, "three"), Set.of());
    assertEquals(2, r.sessionCount());
    assertNull(r.boundTo("two"), "the least recently used session went");
    assertEquals(true, r.boundTo("one") != null && r.boundTo("three") != null);
  }

  @Test
  void conversationImplicitMatchingAppliesTheThreshold() {
    // tokens_per_block 4: a 17-token prompt has 4 blocks; 3 of 4 = 0.75 (reuse), 2 of 4 = 0.5 (new session)
    ConversationRouter r = (ConversationRouter) create("conversation", Map.of("tokens_per_block", 4),
        context(Fleet.CONTEXT, clock));
    r.addWorker(worker("a"));
    r.addWorker(worker("b"));
    int[] base = tokens(17, 0);
    Selection first = r.select(req(1, null, base), Set.of());
    assertEquals(DecisionReason.LOAD, first.reason());
    int[] threeOfFour = base.clone();
    threeOfFour[13] = 999;  // block 4 differs
    Selection s = r.select(req(2, null, threeOfFour), Set.of());
    assertEquals(DecisionReason.IMPLICIT_MATCH, s.reason());
    assertEquals(first.worker().id(), s.worker().id());
    assertEquals(3, s.matchedBlocks());
    int[] twoOfFour = base.clone();
    twoOfFour[9] = 999;  // block 3 differs
    assertEquals(DecisionReason.LOAD, r.select(req(3, null, twoOfFour), Set.of()).reason(), "0.5 < 0.75");
  }

  @Test
  void conversationImplicitMatchingWorksOnTextCodePoints() {
    ConversationRouter r = (ConversationRouter) create("conversation", Map.of("tokens_per_block", 8),
        context(Fleet.CONTEXT, clock));
    r.addWorker(worker("a"));
    r.addWorker(worker("b"));
    String history = "system:You are a helpful coding agent with tools for reading, editing and testing code.\n"
        + "user:fix the off-by-one bug in parser.c where the tokenizer drops the last byte of every line";
    Selection first = r.select(RoutingRequest.builder(1, Fleet.CONTEXT).text(history).build(), Set.of());
    Selection next = r.select(RoutingRequest.builder(2, Fleet.CONTEXT).text(history + "\nassistant:ok").build(), Set.of());
    assertEquals(DecisionReason.IMPLICIT_MATCH, next.reason());
    assertEquals(first.worker().id(), next.worker().id());
  }

  @Test
  void conversationBalancesNewKeysByContentLoad() {
    Router r = create("conversation", Map.of(), context(Fleet.CONTEXT, clock));
    r.addWorker(worker("a"));
    r.addWorker(worker("b"));
    Selection heavy = r.select(RoutingRequest.builder(1, Fleet.CONTEXT).routingKey("k1").textLength(50_000).build(), Set.of());
    String other = heavy.worker().id().equals("a") ? "b" : "a";
    for (int i = 0; i < 3; i++) {
      assertEquals(other, r.select(RoutingRequest.builder(2 + i, Fleet.CONTEXT).routingKey("n" + i).textLength(100).build(),
          Set.of()).worker().id());
    }
  }
}
