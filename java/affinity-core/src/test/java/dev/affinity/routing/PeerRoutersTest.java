package dev.affinity.routing;

import static dev.affinity.routing.RouterTestSupport.context;
import static dev.affinity.routing.RouterTestSupport.create;
import static dev.affinity.routing.RouterTestSupport.req;
import static dev.affinity.routing.RouterTestSupport.tokens;
import static dev.affinity.routing.RouterTestSupport.worker;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.mockito.Mockito.when;

import dev.affinity.executor.KvCacheStats;
import dev.affinity.kv.BlockHasher;
import dev.affinity.kv.HashAlgorithm;
import dev.affinity.routing.RouterTestSupport.FakeClock;
import dev.affinity.worker.Worker;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The peers' policies as baselines: each rule of Dynamo's KV router, SGLang's cache_aware and llm-d's scorers. */
class PeerRoutersTest {
  final FakeClock clock = new FakeClock();

  private Router router(String type, Fleet fleet, Map<String, Object> args, Worker... workers) {
    Router r = create(type, args, context(fleet, clock));
    for (Worker w : workers) {
      r.addWorker(w);
    }
    return r;
  }

  /** Indexes (KV events) the first {@code blocks} 4-token blocks of {@code prompt} at the worker. */
  private static void hold(Router r, String worker, int[] prompt, int blocks) {
    long[] keys = new BlockHasher(HashAlgorithm.V1_BLOCK_KEY, 4).keys(prompt, null);
    AbstractRouter ar = (AbstractRouter) r;
    ar.index.store(ar.index.location(worker, -1), keys, 0, blocks);
  }

  private static String pick(Router r, RoutingRequest q) {
    return r.select(q, Set.of()).worker().id();
  }

  // ------------------------------------------------------------------------------------------
  // dynamo_kv

  @Test
  void dynamoPrefillCostIsWeightedUncachedPlusActivePrefillBlocks() {
    int[] prompt = tokens(41, 0);  // 10 blocks of 4 (+1 token)
    Router r = router("dynamo_kv", Fleet.CONTEXT, Map.of(), worker("a"), worker("b"));
    hold(r, "a", prompt, 8);  // a: 41 - 32 = 9 new tokens; b: 41
    Selection first = r.select(req(1, null, prompt), Set.of());
    assertEquals("a", first.worker().id());
    assertEquals(8, first.matchedBlocks());
    // a now has 9 active prefill tokens: (9 + 9) / 4 = 4.5 blocks < b's 41 / 4 = 10.25
    assertEquals("a", pick(r, req(2, null, prompt)));
    // 40 more active prefill tokens on a: (18 + 40 + 9) / 4 = 16.75 > 10.25
    r.select(req(3, null, tokens(40, 5000)), Set.of("b"));
    assertEquals("b", pick(r, req(4, null, prompt)));
  }

  @Test
  void dynamoOverlapWeightScalesThePrefillTerm() {
    int[] prompt = tokens(41, 0);
    Router r = router("dynamo_kv", Fleet.CONTEXT, Map.of("overlap_score_weight", 0.0), worker("a"), worker("b"));
    hold(r, "a", prompt, 8);
    hold(r, "b", tokens(100, 9000), 20);  // b's tree is bigger
    // weight 0: every logit is 0 (prefill stage tracks no decode blocks): the smaller tree wins the tie
    assertEquals("a", pick(r, req(1, null, prompt)));
  }

  @Test
  void dynamoActivePrefillTokensLeaveWhenThePrefillEnds() {
    Router r = router("dynamo_kv", Fleet.CONTEXT, Map.of(), worker("a"), worker("b"));
    Selection big = r.select(req(1, null, tokens(400, 0)), Set.of("b"));
    assertEquals("b", pick(r, req(2, null, tokens(40, 7000))), "a has 400 active prefill tokens");
    big.release(Outcome.SUCCESS);
    Selection again = r.select(req(3, null, tokens(40, 8000)), Set.of());
    assertTrue(again.worker().id().equals("a"), "b still has 40 active tokens, a none");
  }

  @Test
  void dynamoTiesGoToTheSmallestTreeThenAtRandom() {
    Router r = router("dynamo_kv", Fleet.CONTEXT, Map.of(), worker("a"), worker("b"), worker("c"));
    hold(r, "a", tokens(100, 9000), 10);
    hold(r, "b", tokens(100, 9000), 5);
    hold(r, "c", tokens(100, 9000), 5);
    Map<String, Integer> seen = new HashMap<>();
    for (int i = 0; i < 40; i++) {
      Selection s = r.select(req(i, null, tokens(8, 50_000 + i * 10)), Set.of());
      seen.merge(s.worker().id(), 1, Integer::sum);
      s.release(Outcome.SUCCESS);
    }
    assertFalse(seen.containsKey("a"), "a's tree is the largest: " + seen);
    assertTrue(seen.getOrDefault("b", 0) > 0 && seen.getOrDefault("c", 0) > 0, "b and c share the ties: " + seen);
  }

  @Test
  void dynamoTemperatureSamplesTheSoftmaxOfNormalizedLogits() {
    int[] prompt = tokens(41, 0);
    Router r = router("dynamo_kv", Fleet.CONTEXT, Map.of("router_temperature", 0.5), worker("a"), worker("b"));
    hold(r, "a", prompt, 8);  // logits 2.25 (a) and 10.25 (b): p(b) = e^-2 / (1 + e^-2) = 0.119
    int b = 0;
    for (int i = 0; i < 2000; i++) {
      Selection s = r.select(req(i, null, prompt), Set.of());
      b += s.worker().id().equals("b") ? 1 : 0;
      s.release(Outcome.SUCCESS);
    }
    assertEquals(0.119, b / 2000.0, 0.03);
  }

  @Test
  void dynamoDecodeRouterBalancesKvBlocksAndIgnoresPrefixes() {
    int[] prompt = tokens(41, 0);
    Router r = router("dynamo_kv", Fleet.GENERATION, Map.of(), worker("a"), worker("b"));
    assertFalse(r.usesKvEvents());
    hold(r, "a", prompt, 8);  // ignored by the decode router
    Selection big = r.select(req(1, null, tokens(400, 1000)), Set.of("b"));  // 100 blocks decoding on a
    assertEquals("b", pick(r, req(2, null, prompt)));
    assertEquals("b", pick(r, req(3, null, prompt)), "b: 11 + 11 blocks < a: 100 + 11");
    big.release(Outcome.SUCCESS);
    assertEquals("a", pick(r, req(4, null, prompt)));
  }

  // ------------------------------------------------------------------------------------------
  // sglang_cache_aware

  private static Map<String, Object> sglang(Object... kv) {
    Map<String, Object> m = new HashMap<>(Map.of("block_size", 4));
    for (int i = 0; i < kv.length; i += 2) {
      m.put((String) kv[i], kv[i + 1]);
    }
    return m;
  }

  @Test
  void sglangFollowsTheTreeAboveTheCacheThreshold() {
    Router r = router("sglang_cache_aware", Fleet.CONTEXT, sglang(), worker("a"), worker("b"));
    assertFalse(r.usesKvEvents());
    int[] prompt = tokens(41, 0);
    String home = pick(r, req(1, null, prompt));
    // same prompt extended: 10 of 12 blocks match (0.83 > 0.3): the tree's tenant, even when it is busier
    r.select(req(2, null, tokens(40, 7000)), Set.of(home.equals("a") ? "b" : "a"));
    int[] longer = new int[49];
    System.arraycopy(prompt, 0, longer, 0, 41);
    assertEquals(home, pick(r, req(3, null, longer)));
  }

  @Test
  void sglangSendsAMissToTheSmallestTree() {
    Router r = router("sglang_cache_aware", Fleet.CONTEXT, sglang(), worker("a"), worker("b"));
    String first = pick(r, req(1, null, tokens(400, 0)));  // 100 blocks for one tenant
    // unrelated prompt: match 0 <= 0.3, the other tenant's tree (empty) is the smallest
    assertEquals(first.equals("a") ? "b" : "a", pick(r, req(2, null, tokens(40, 90_000))));
    // a low match rate (2 of 25 blocks) is still a miss
    int[] mostlyNew = tokens(100, 200_000);
    System.arraycopy(tokens(8, 0), 0, mostlyNew, 0, 8);
    SglangCacheAwareRouter s = (SglangCacheAwareRouter) r;
    String smaller = s.treeSize(new Candidate(worker("a"), -1)) <= s.treeSize(new Candidate(worker("b"), -1)) ? "a" : "b";
    assertEquals(smaller, pick(r, req(3, null, mostlyNew)));
  }

  @Test
  void sglangBalancesOnlyWhenBothGatesTrip() {
    int[] prompt = tokens(41, 0);
    Router r = router("sglang_cache_aware", Fleet.CONTEXT, sglang("balance_abs_threshold", 2, "balance_rel_threshold", 1.5),
        worker("a"), worker("b"));
    String home = pick(r, req(1, null, prompt));
    String other = home.equals("a") ? "b" : "a";
    r.select(req(2, null, tokens(8, 500)), Set.of(other));
    r.select(req(3, null, tokens(8, 600)), Set.of(other));
    // loads 3 and 0: 3 - 0 > 2 and 3 > 1.5 * 0: imbalanced, the least loaded takes it
    Selection s = r.select(req(4, null, prompt), Set.of());
    assertEquals(other, s.worker().id());
    assertEquals(DecisionReason.LOAD, s.reason());
    // loads 3 and 1: 3 - 1 = 2 is not > 2: balanced again, and both tenants now hold the prompt
    assertTrue(Set.of("a", "b").contains(pick(r, req(5, null, prompt))));
  }

  @Test
  void sglangEvictsLeastRecentlyUsedLeavesAboveTheTreeSize() {
    Router r = router("sglang_cache_aware", Fleet.CONTEXT,
        sglang("max_tree_size", 20, "eviction_interval_secs", 10), worker("a"));
    SglangCacheAwareRouter s = (SglangCacheAwareRouter) r;
    Candidate a = new Candidate(worker("a"), -1);
    r.select(req(1, null, tokens(41, 0)), Set.of()).release(Outcome.SUCCESS);       // 10 blocks of 4
    clock.advance(Duration.ofSeconds(1));
    r.select(req(2, null, tokens(41, 5000)), Set.of()).release(Outcome.SUCCESS);    // 10 more
    assertEquals(80, s.treeSize(a));
    clock.advance(Duration.ofSeconds(10));
    r.select(req(3, null, tokens(5, 9000)), Set.of());  // runs the eviction, then inserts 1 block
    assertEquals(20 + 4, s.treeSize(a), "evicted down to the limit before the insert");
  }

  @Test
  void sglangDpAwareMakesEveryRankATenant() {
    Router r = router("sglang_cache_aware", Fleet.CONTEXT, sglang("dp_aware", true),
        worker("a", 4, true, 2, 64));
    Selection s = r.select(req(1, null, tokens(41, 0)), Set.of());
    assertTrue(s.rank() >= 0);
    Router plain = router("sglang_cache_aware", Fleet.GENERATION, sglang(), worker("a", 4, true, 2, 64));
    assertEquals(-1, plain.select(req(1, null, tokens(41, 0)), Set.of()).rank(), "the worker picks its rank");
  }

  // ------------------------------------------------------------------------------------------
  // llmd_scorer

  private static Worker metered(String id, int ranks, long queued, long used, long total) {
    Worker w = worker(id, 4, ranks > 1, ranks, 64);
    for (int r = 0; r < ranks; r++) {
      when(w.kvCacheStats(r)).thenReturn(stats(r, queued, used, total));
    }
    return w;
  }

  private static KvCacheStats stats(int rank, long queued, long used, long total) {
    return new KvCacheStats(rank, total, total - used, used, 0, 4, 0, 0, 0, 0, 0, queued, queued, 0, -1);
  }

  @Test
  void llmdScoresWeightedPrefixQueueAndKvUtilization() {
    Worker a = metered("a", 1, 4, 50, 100);  // queue 4 (the most), KV 50% used
    Worker b = metered("b", 1, 0, 0, 100);   // idle and empty
    Router r = router("llmd_scorer", Fleet.CONTEXT, Map.of(), a, b);
    assertFalse(r.usesKvEvents());
    int[] prompt = tokens(41, 0);
    // cold: b = 2 * 1 + 2 * 1 = 4 beats a = 0 + 2 * 0.5 = 1
    assertEquals("b", pick(r, req(1, null, prompt)));
    // b now holds the prompt's blocks in the approximate index: b = 3 + 4 = 7
    assertEquals("b", pick(r, req(2, null, prompt)));
    // a full prefix match on a (3) plus a better queue and KV than b's would win there
    when(b.kvCacheStats(0)).thenReturn(stats(0, 9, 100, 100));  // b: 3 * 1 + 0 + 0 = 3
    when(a.kvCacheStats(0)).thenReturn(stats(0, 0, 0, 100));    // a: 0 + 2 + 2 = 4
    assertEquals("a", pick(r, req(3, null, prompt)));
  }

  @Test
  void llmdQueueScoresAreMinMaxNormalizedAndOneWhenEqual() {
    Worker a = metered("a", 1, 2, 0, 100);
    Worker b = metered("b", 1, 2, 0, 100);
    Worker c = metered("c", 1, 2, 0, 100);
    Router r = router("llmd_scorer", Fleet.CONTEXT, Map.of("prefix_cache_weight", 0.0, "kv_cache_utilization_weight", 0.0),
        a, b, c);
    Map<String, Integer> seen = new HashMap<>();
    for (int i = 0; i < 30; i++) {
      seen.merge(pick(r, req(i, null, tokens(8, 1000 * i))), 1, Integer::sum);
    }
    assertEquals(3, seen.size(), "equal queues score 1 each: ties go at random " + seen);
    when(b.kvCacheStats(0)).thenReturn(stats(0, 1, 0, 100));
    when(c.kvCacheStats(0)).thenReturn(stats(0, 3, 0, 100));
    assertEquals("b", pick(r, req(99, null, tokens(8, 99_000))), "(3 - 1) / (3 - 1) = 1 for b, 0.5 for a, 0 for c");
  }

  @Test
  void llmdPrefixScoreCountsHeldBlocksOverTheFirstMaxPrefixBlocks() {
    Worker a = metered("a", 1, 0, 0, 1000);
    Worker b = metered("b", 1, 0, 0, 1000);
    Router r = router("llmd_scorer", Fleet.CONTEXT, Map.of("max_prefix_blocks", 4, "queue_weight", 0.0,
        "kv_cache_utilization_weight", 0.0), a, b);
    int[] shortPrompt = tokens(17, 0);  // 4 whole blocks
    String home = pick(r, req(1, null, shortPrompt));
    // a long prompt with the same first 4 blocks: only 4 blocks are hashed, so it matches fully (score 1)
    int[] longPrompt = tokens(400, 0);
    Selection s = r.select(req(2, null, longPrompt), Set.of());
    assertEquals(home, s.worker().id());
    assertEquals(4, s.matchedBlocks());
  }

  @Test
  void llmdIndexCapacityIsTheEndpointsKvBlocksAndEvictsPrefixesFirst() {
    Worker a = metered("a", 1, 0, 0, 6);  // auto-tuned LRU: 6 entries
    Router r = router("llmd_scorer", Fleet.CONTEXT, Map.of("queue_weight", 0.0, "kv_cache_utilization_weight", 0.0), a);
    int[] p1 = tokens(17, 0);      // blocks 0..3
    int[] p2 = tokens(17, 5000);   // 4 more: the LRU drops p1's first two blocks
    r.select(req(1, null, p1), Set.of());
    r.select(req(2, null, p2), Set.of());
    Selection s = r.select(req(3, null, p1), Set.of());
    assertEquals(0, s.matchedBlocks(), "the walk stops at p1's evicted first block");
  }

  @Test
  void llmdMakesEveryVisibleRankAnEndpoint() {
    Worker a = worker("a", 4, true, 2, 64);
    when(a.kvCacheStats(0)).thenReturn(stats(0, 5, 90, 100));
    when(a.kvCacheStats(1)).thenReturn(stats(1, 0, 10, 100));
    Router r = router("llmd_scorer", Fleet.GENERATION, Map.of(), a);
    Selection s = r.select(req(1, null, tokens(41, 0)), Set.of());
    assertEquals(1, s.rank());
  }
}
