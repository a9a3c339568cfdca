package dev.affinity.routing;

import static dev.affinity.routing.RouterTestSupport.context;
import static dev.affinity.routing.RouterTestSupport.create;
import static dev.affinity.routing.RouterTestSupport.req;
import static dev.affinity.routing.RouterTestSupport.tokens;
import static dev.affinity.routing.RouterTestSupport.worker;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.mockito.Mockito.when;

import dev.affinity.config.SubagentScope;
import dev.affinity.kv.BlockHasher;
import dev.affinity.kv.HashAlgorithm;
import dev.affinity.routing.RouterTestSupport.FakeClock;
import dev.affinity.worker.Worker;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Affinity's own policy: soft pins, the margin, bounded load, predict-on-route, rendezvous placement. */
class AffinityRouterTest {
  final FakeClock clock = new FakeClock();

  private AffinityRouter router(Map<String, Object> args, String... workers) {
    AffinityRouter r = (AffinityRouter) create("affinity", args, context(Fleet.CONTEXT, clock));
    for (String w : workers) {
      r.addWorker(worker(w));
    }
    return r;
  }

  @Test
  void aPinHoldsUnderNormalLoad() {
    AffinityRouter r = router(Map.of("pin_break_margin_tokens", 4096, "load_epsilon", 0.25), "a", "b", "c", "d");
    Selection first = r.select(req(1, "parent"), Set.of());
    assertEquals(DecisionReason.NEW_PIN, first.reason());
    // background traffic keeps every worker a little busy
    List<Selection> live = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      live.add(r.select(req(100 + i, null, tokens(256, 5000 + i * 300)), Set.of()));
    }
    for (int i = 0; i < 5; i++) {
      Selection s = r.select(req(2 + i, "parent"), Set.of());
      assertEquals(first.candidate(), s.candidate());
      assertEquals(DecisionReason.PINNED, s.reason());
      s.release(Outcome.SUCCESS);
    }
    live.forEach(s -> s.release(Outcome.SUCCESS));
  }

  @Test
  void aPinBreaksWhenStayingCostsMoreThanTheMargin() {
    // margin 1000 tokens: queue 3000 tokens of prefill work on the pinned worker
    AffinityRouter r = router(Map.of("pin_break_margin_tokens", 1000, "load_epsilon", 100.0), "a", "b");
    Selection pin = r.select(req(1, "k", tokens(64, 0)), Set.of());
    pin.release(Outcome.SUCCESS);
    String home = pin.worker().id();
    Selection busy = r.select(req(2, null, tokens(3000, 10_000)), Set.of(home.equals("a") ? "b" : "a"));
    assertEquals(home, busy.worker().id());
    Selection moved = r.select(req(3, "k", tokens(64, 0)), Set.of());
    assertEquals(DecisionReason.PIN_BROKEN, moved.reason());
    assertNotEquals(home, moved.worker().id());
    assertEquals(moved.candidate(), r.pinnedTo("k"), "the pin follows");
    // below the margin it would have stayed: 500 tokens queued on the new home
    Selection small = r.select(req(4, null, tokens(500, 20_000)), Set.of(home));
    Selection stays = r.select(req(5, "k", tokens(64, 0)), Set.of());
    assertEquals(DecisionReason.PINNED, stays.reason());
    small.release(Outcome.SUCCESS);
    busy.release(Outcome.SUCCESS);
  }

  /** A sub-agent's context request: routed by its root's id, with its own id as the conversation. */
  static RoutingRequest subagent(long id, String own, String root, int[] tokens) {
    return RoutingRequest.builder(id, Fleet.CONTEXT).routingKey(root).conversationId(own).affinityId(root)
        .tokens(tokens).build();
  }

  @Test
  void softPlacementASubagentsFirstTurnFollowsItsRootWhileThatCostsNoMoreThanTheMargin() {
    // margin 0.5: a 1000-token sub-agent turn follows its root while the root's worker has at most 500 tokens of
    // prefill work more than the best
    AffinityRouter r = router(Map.of("soft_placement_margin", 0.5, "load_epsilon", 100.0), "a", "b");
    Selection root = r.select(req(1, "root", tokens(64, 0)), Set.of());
    root.release(Outcome.SUCCESS);
    String home = root.worker().id();
    Selection small = r.select(req(2, null, tokens(400, 10_000)), Set.of(home.equals("a") ? "b" : "a"));
    Selection first = r.select(subagent(3, "sub-1", "root", tokens(1000, 50_000)), Set.of());
    assertEquals(DecisionReason.FOLLOWED_ROOT, first.reason());
    assertEquals(home, first.worker().id());
    assertEquals(first.candidate(), r.pinnedTo("sub-1"), "the sub-agent has its own pin from its first turn on");
    first.release(Outcome.SUCCESS);
    small.release(Outcome.SUCCESS);

    // 2000 tokens queued on the root's worker: the next sub-agent's first turn goes elsewhere, the root's pin stays
    Selection busy = r.select(req(4, null, tokens(2000, 20_000)), Set.of(home.equals("a") ? "b" : "a"));
    Selection away = r.select(subagent(5, "sub-2", "root", tokens(1000, 60_000)), Set.of());
    assertEquals(DecisionReason.NEW_PIN, away.reason());
    assertNotEquals(home, away.worker().id());
    assertEquals(root.candidate(), r.pinnedTo("root"), "a sub-agent never moves its root's pin");
    assertEquals(away.candidate(), r.pinnedTo("sub-2"));
    away.release(Outcome.SUCCESS);
    busy.release(Outcome.SUCCESS);

    // later turns follow the sub-agent's own pin, wherever the root is
    Selection later = r.select(subagent(6, "sub-2", "root", tokens(1100, 60_000)), Set.of());
    assertEquals(DecisionReason.PINNED, later.reason());
    assertEquals(away.worker().id(), later.worker().id());
  }

  @Test
  void softPlacementOffKeepsEveryTurnOnTheRootsPin() {
    AffinityRouter r = router(Map.of("soft_placement_margin", false, "load_epsilon", 100.0, "pin_break_margin_tokens",
        4096), "a", "b");
    Selection root = r.select(req(1, "root", tokens(64, 0)), Set.of());
    root.release(Outcome.SUCCESS);
    String home = root.worker().id();
    Selection busy = r.select(req(2, null, tokens(2000, 20_000)), Set.of(home.equals("a") ? "b" : "a"));
    Selection sub = r.select(subagent(3, "sub-1", "root", tokens(1000, 60_000)), Set.of());
    assertEquals(DecisionReason.PINNED, sub.reason(), "2000 tokens is below the 4096-token pin margin");
    assertEquals(home, sub.worker().id());
    assertEquals(null, r.pinnedTo("sub-1"), "no own pin: the root's id is the key");
    busy.release(Outcome.SUCCESS);
  }

  @Test
  void softPlacementIsOnByDefaultInAffinitysPolicy() {
    AffinityRouter r = router(Map.of("load_epsilon", 100.0), "a", "b");
    r.select(req(1, "root", tokens(64, 0)), Set.of()).release(Outcome.SUCCESS);
    Selection first = r.select(subagent(2, "sub-1", "root", tokens(1000, 50_000)), Set.of());
    assertEquals(DecisionReason.FOLLOWED_ROOT, first.reason());
    assertEquals(first.candidate(), r.pinnedTo("sub-1"));
  }

  @Test
  void aDeadRemovedOrExcludedPinMoves() {
    AffinityRouter r = router(Map.of(), "a", "b", "c");
    Selection pin = r.select(req(1, "k"), Set.of());
    Selection ex = r.select(req(2, "k"), Set.of(pin.worker().id()));
    assertEquals(DecisionReason.RE_PINNED, ex.reason());
    Worker now = ex.worker();
    when(now.isAlive()).thenReturn(false);
    Selection dead = r.select(req(3, "k"), Set.of());
    assertEquals(DecisionReason.RE_PINNED, dead.reason());
    r.removeWorker(dead.worker().id());
    assertEquals(DecisionReason.NEW_PIN, r.select(req(4, "k"), Set.of()).reason());
  }

  @Test
  void boundedLoadIsNeverExceeded() {
    double eps = 0.25;
    AffinityRouter r = router(Map.of("load_epsilon", eps), "a", "b", "c", "d");
    SplittableRandom rnd = new SplittableRandom(3);
    Deque<Selection> live = new ArrayDeque<>();
    Map<String, Integer> active = new HashMap<>();
    for (int i = 0; i < 2000; i++) {
      if (!live.isEmpty() && rnd.nextInt(3) == 0) {
        Selection s = rnd.nextBoolean() ? live.pollFirst() : live.pollLast();
        active.merge(s.worker().id(), -1, Integer::sum);
        s.release(Outcome.SUCCESS);
        continue;
      }
      int total = active.values().stream().mapToInt(Integer::intValue).sum();
      double cap = Math.ceil((1 + eps) * (total + 1) / 4.0);
      // a hot key and a shared prefix try to drag everything to one worker
      String key = rnd.nextInt(4) == 0 ? "k" + rnd.nextInt(50) : "hot";
      Selection s = r.select(req(i, key, tokens(512, 0)), Set.of());
      int after = active.merge(s.worker().id(), 1, Integer::sum);
      assertTrue(after <= cap, "worker " + s.worker().id() + " has " + after + " > cap " + cap);
      live.add(s);
    }
  }

  @Test
  void siblingBurstsCoLocateBeforeAnyKvEvent() {
    // no backfill and no KV events: only predict-on-route knows where the parent's context went
    AffinityRouter r = router(Map.of("load_epsilon", 10.0, "track_routed_blocks", false), "a", "b", "c", "d");
    int[] parentContext = tokens(4097, 0);
    Selection parent = r.select(req(100, null, parentContext), Set.of());
    parent.release(Outcome.SUCCESS);
    Set<String> placed = new HashSet<>();
    List<Selection> burst = new ArrayList<>();
    for (int child = 0; child < 5; child++) {
      int[] prompt = java.util.Arrays.copyOf(parentContext, 4096 + 64);
      for (int t = 4096; t < prompt.length; t++) {
        prompt[t] = 900_000 + child * 100 + t;  // each fork adds its own task
      }
      // no routing key (fork-style sub-agents without the header), all in flight at once
      Selection s = r.select(req(child, null, prompt), Set.of());
      placed.add(s.worker().id());
      assertEquals(1024, s.matchedBlocks(), "predicted from the parent's routed blocks");
      burst.add(s);
    }
    assertEquals(Set.of(parent.worker().id()), placed, "the whole burst joins the parent's context");

    // without predictions the same burst would spread
    AffinityRouter blind = router(Map.of("load_epsilon", 10.0, "track_routed_blocks", false, "predict_ttl_seconds", 0.0),
        "a", "b", "c", "d");
    blind.select(req(100, null, parentContext), Set.of()).release(Outcome.SUCCESS);
    Set<String> spread = new HashSet<>();
    for (int child = 0; child < 4; child++) {
      spread.add(blind.select(req(child, null, tokens(4160, 0)), Set.of()).worker().id());
    }
    assertTrue(spread.size() > 1, "blind routing spreads the siblings: " + spread);
  }

  @Test
  void predictionsExpire() {
    AffinityRouter r = router(Map.of("predict_ttl_seconds", 5.0, "track_routed_blocks", false), "a", "b");
    int[] prompt = tokens(512, 0);
    r.select(req(1, null, prompt), Set.of()).release(Outcome.FAILURE);
    assertEquals(127, r.select(req(2, null, prompt), Set.of()).matchedBlocks(), "511 usable tokens = 127 full blocks");
    clock.advance(java.time.Duration.ofSeconds(6));
    assertEquals(0, r.select(req(3, null, prompt), Set.of()).matchedBlocks());
  }

  @Test
  void aRemovalEventEndsThePredictionAtThatLocation() {
    // predicted from routing, then the worker evicts the blocks: the events are the truth from then on
    AffinityRouter r = router(Map.of("track_routed_blocks", false), "a", "b");
    int[] prompt = tokens(512, 0);
    Selection first = r.select(req(1, null, prompt), Set.of());
    first.release(Outcome.SUCCESS);
    assertEquals(127, r.select(req(2, null, prompt), Set.of()).matchedBlocks(), "predicted");
    long[] keys = new BlockHasher(HashAlgorithm.V1_BLOCK_KEY, 4).keys(prompt, null);
    r.onKvEvents(first.worker().id(), List.of(new dev.affinity.executor.KvEvent(2,
        dev.affinity.executor.KvEventType.REMOVED, 0, 0, false, 0, java.util.Arrays.copyOfRange(keys, 64, 128), null,
        0, 0)));
    assertEquals(64, r.select(req(3, null, prompt), Set.of()).matchedBlocks(),
        "the 64 blocks before the removed ones are still predicted");
    r.onKvEvents(first.worker().id(), List.of(new dev.affinity.executor.KvEvent(3,
        dev.affinity.executor.KvEventType.REMOVED, 0, 0, false, 0, keys, null, 0, 0)));
    assertEquals(0, r.select(req(4, null, prompt), Set.of()).matchedBlocks());
  }

  @Test
  void kvEventsDriveTheCost() {
    AffinityRouter r = router(Map.of("predict_ttl_seconds", 0.0), "a", "b");
    int[] prompt = tokens(1025, 0);
    long[] keys = new BlockHasher(HashAlgorithm.V1_BLOCK_KEY, 4).keys(prompt, null);
    r.onKvEvents("b", List.of(new dev.affinity.executor.KvEvent(1, dev.affinity.executor.KvEventType.STORED, 0, 0,
        false, 0, keys, null, 0, 0)));
    Selection s = r.select(req(1, "new-key", prompt), Set.of());
    assertEquals("b", s.worker().id(), "the cached prefix makes b far cheaper");
    assertEquals(256, s.matchedBlocks());
  }

  private static void stored(AffinityRouter r, String worker, int rank, int[] prompt) {
    long[] keys = new BlockHasher(HashAlgorithm.V1_BLOCK_KEY, 4).keys(prompt, null);
    r.onKvEvents(worker, List.of(new dev.affinity.executor.KvEvent(1, dev.affinity.executor.KvEventType.STORED, rank,
        0, false, 0, keys, null, 0, 0)));
  }

  @Test
  void aRankWhoseSiblingIsBusyCostsWhatTheLockstepIterationsTake() {
    // two instances of two ranks; 20,000 tokens of prefill queued on a/0: a/1 is idle but iterates in lockstep
    // with a/0, so a 1,000-token request there takes one iteration of up to max_num_tokens (8,192) of a/0's work
    AffinityRouter r = (AffinityRouter) create("affinity", Map.of("predict_ttl_seconds", 0.0),
        context(Fleet.CONTEXT, clock));
    r.addWorker(worker("a", 4, true, 2, 64));
    r.addWorker(worker("b", 4, true, 2, 64));
    Selection busy = r.select(req(1, null, tokens(20_000, 0)), Set.of("b"));
    Candidate hot = busy.candidate();
    for (int i = 0; i < 4; i++) {
      Selection s = r.select(req(10 + i, null, tokens(1000, 100_000 * (i + 1))), Set.of());
      assertEquals("b", s.worker().id(), "an idle instance beats the busy one's idle rank");
      s.release(Outcome.FAILURE);
    }
    // 6,000 of 7,000 tokens cached on a's idle rank: 1,000 new tokens there still finish after an iteration of
    // 8,192 of a/0's tokens, and all 7,000 on b finish sooner
    int[] prompt = tokens(7000, 500_000);
    stored(r, "a", 1 - hot.rank(), java.util.Arrays.copyOf(prompt, 6000));
    assertEquals("b", r.select(req(20, null, prompt), Set.of()).worker().id());
    // with 6,000 of 9,000 cached tokens: 3,000 new tokens there (lockstep: 8,192) beat 9,000 on b
    int[] longer = tokens(9000, 700_000);
    stored(r, "a", 1 - hot.rank(), java.util.Arrays.copyOf(longer, 6000));
    Selection s = r.select(req(21, null, longer), Set.of());
    assertEquals("a", s.worker().id());
    assertEquals(1 - hot.rank(), s.candidate().rank());
    busy.release(Outcome.SUCCESS);
  }

  /**
   * Two instances of two ranks; 20,000 tokens queued on one rank of a; a 4,000-token request with 3,000 tokens cached
   * on a's other rank. With max_num_tokens 2,048 it costs max(1,000, min(20,000, 1 x 2,048)) = 2,048 there, less
   * than 4,000 on b; with 8,192 it would go to b.
   */
  private static String whereTheLockstepCaseGoes(AffinityRouter r, Worker a, Worker b) {
    r.addWorker(a);
    r.addWorker(b);
    Selection busy = r.select(req(1, null, tokens(20_000, 0)), Set.of("b"));
    int[] prompt = tokens(4000, 300_000);
    stored(r, "a", 1 - busy.candidate().rank(), java.util.Arrays.copyOf(prompt, 3000));
    String chosen = r.select(req(2, null, prompt), Set.of()).worker().id();
    busy.release(Outcome.SUCCESS);
    return chosen;
  }

  private AffinityRouter lockstepRouter(Map<String, Object> args) {
    Map<String, Object> all = new HashMap<>(args);
    all.put("predict_ttl_seconds", 0.0);
    return (AffinityRouter) create("affinity", all, context(Fleet.CONTEXT, clock));
  }

  private static Worker withMaxNumTokens(String id, int maxNumTokens) {
    Worker w = org.mockito.Mockito.mock(Worker.class, id);
    when(w.id()).thenReturn(id);
    when(w.info()).thenReturn(new dev.affinity.worker.WorkerInfo(4, HashAlgorithm.V1_BLOCK_KEY, 2, true, 64,
        maxNumTokens));
    when(w.isAlive()).thenReturn(true);
    return w;
  }

  @Test
  void lockstepUsesTheSectionsMaxNumTokens() {
    assertEquals("a", whereTheLockstepCaseGoes(lockstepRouter(Map.of("max_num_tokens", 2048)),
        worker("a", 4, true, 2, 64), worker("b", 4, true, 2, 64)));
    assertEquals("b", whereTheLockstepCaseGoes(lockstepRouter(Map.of()),
        worker("a", 4, true, 2, 64), worker("b", 4, true, 2, 64)), "upstream's 8,192 by default");
  }

  @Test
  void lockstepUsesEachWorkersMaxNumTokensWithoutAnArgument() {
    assertEquals("a", whereTheLockstepCaseGoes(lockstepRouter(Map.of()), withMaxNumTokens("a", 2048),
        withMaxNumTokens("b", 2048)));
    assertEquals("b", whereTheLockstepCaseGoes(lockstepRouter(Map.of("max_num_tokens", 8192)),
        withMaxNumTokens("a", 2048), withMaxNumTokens("b", 2048)), "the section's value wins");
  }

  /** A one-rank worker whose rank reports {@code computed} prompt tokens computed. */
  private static Worker reporting(String id, java.util.concurrent.atomic.AtomicLong computed) {
    Worker w = worker(id, 4, true, 1, 64);
    when(w.kvCacheStats(0)).thenAnswer(inv -> new dev.affinity.executor.KvCacheStats(0, 1000, 1000, 0, 0, 4, 0, 0, 0,
        0, 0, 0, 0, 0, computed.get()));
    return w;
  }

  /**
   * Where a session's next call goes while a 100,000-token prefill runs on the rank that holds its 10,000 cached
   * tokens: the rank reports {@code computedSince} of the prefill's tokens computed since it was routed.
   */
  private String whereTheSessionGoesBesideALongPrefill(String queuedWork, long computedSince) {
    var aCount = new java.util.concurrent.atomic.AtomicLong(50_000);  // computed for earlier requests
    var bCount = new java.util.concurrent.atomic.AtomicLong(0);
    AffinityRouter r = (AffinityRouter) create("affinity", Map.of("predict_ttl_seconds", 0.0, "queued_work",
        queuedWork), context(Fleet.CONTEXT, clock));
    r.addWorker(reporting("a", aCount));
    r.addWorker(reporting("b", bCount));
    int[] prompt = tokens(10_100, 900_000);
    stored(r, "a", 0, java.util.Arrays.copyOf(prompt, 10_000));
    Selection prefill = r.select(req(1, null, tokens(100_000, 0)), Set.of("b"));
    aCount.addAndGet(computedSince);
    Selection next = r.select(req(2, "session", prompt), Set.of());
    next.release(Outcome.SUCCESS);
    prefill.release(Outcome.SUCCESS);
    return next.worker().id();
  }

  @Test
  void aLongPrefillNearlyDoneByItsRanksWordKeepsTheSessionBesideItsCache() {
    // routed whole, the prefill's ~320k units of work outweigh re-prefilling 10,100 tokens on b (~12k)
    assertEquals("b", whereTheSessionGoesBesideALongPrefill("reported", 0));
    // 99,990 of its tokens computed: ten are left, at the depth its chunks reached (~54 units)
    assertEquals("a", whereTheSessionGoesBesideALongPrefill("reported", 99_990));
    assertEquals("b", whereTheSessionGoesBesideALongPrefill("routed", 99_990), "counted whole until released");
    // half done: the deep half of the attention is still to come (50,000 + 2.2e-5 x (1e10 - 2.5e9) = ~215k)
    assertEquals("b", whereTheSessionGoesBesideALongPrefill("reported", 50_000));
  }

  @Test
  void anotherFrontendsPrefillCountsWholeWhateverTheRankComputed() {
    // the 100,000-token prefill on a was routed by a peer frontend (its load share); the rank has computed 99,990
    // tokens, but this router cannot tell whose: a looks busier than it is, never idler
    var aCount = new java.util.concurrent.atomic.AtomicLong(0);
    AffinityRouter r = (AffinityRouter) create("affinity", Map.of("predict_ttl_seconds", 0.0, "queued_work",
        "reported"), context(Fleet.CONTEXT, clock));
    r.addWorker(reporting("a", aCount));
    r.addWorker(reporting("b", new java.util.concurrent.atomic.AtomicLong(0)));
    r.peerLoads("peer", List.of(new LoadShare("a", 0, 1, 100_000, 100_000 + 2.2e-5 * 1e10, 100_000)));
    int[] prompt = tokens(10_100, 900_000);
    stored(r, "a", 0, java.util.Arrays.copyOf(prompt, 10_000));
    Selection own = r.select(req(1, null, tokens(1_000, 0)), Set.of("b"));  // routed after the peer's, on a
    aCount.addAndGet(99_990);
    Selection next = r.select(req(2, "session", prompt), Set.of());
    assertEquals("b", next.worker().id(), "the peer's prefill and what is left of this router's stay queued");
    next.release(Outcome.SUCCESS);
    own.release(Outcome.SUCCESS);
  }

  @Test
  void queuedWorkIsReportedOrRouted() {
    RouterArgs args = RouterArgs.of("affinity", Map.of("queued_work", "remaining"));
    dev.affinity.config.ConfigException e = org.junit.jupiter.api.Assertions.assertThrows(
        dev.affinity.config.ConfigException.class, () -> AffinityRouterSettings.of(context(Fleet.CONTEXT, clock), args));
    assertTrue(e.getMessage().contains("queued_work"), e.getMessage());
    assertTrue(e.getMessage().contains("reported, routed"), e.getMessage());
    assertTrue(!AffinityRouterSettings.of(context(Fleet.CONTEXT, clock), RouterArgs.of("affinity", Map.of()))
        .queuedWorkReported(), "routed by default");
  }

  @Test
  void aSiblingIsChargedAtThePaceOfItsOwnIterations() {
    // attention makes deep chunks expensive: a/0 computes 10,000 new tokens after 90,000 cached (2 iterations of
    // ~0.95 M units each), b/0 40,000 tokens from scratch (5 iterations of ~0.33 M). A 1,000-token request on an
    // idle rank waits one iteration of its sibling: b/1 is the cheaper, although counted in tokens (8,192 per
    // iteration) both would cost the same and a/1, whose cache has more room, would win the tie.
    AffinityRouter r = (AffinityRouter) create("affinity", Map.of("predict_ttl_seconds", 0.0, "attention_factor", 1e-3),
        context(Fleet.CONTEXT, clock));
    r.addWorker(worker("a", 4, true, 2, 64));
    r.addWorker(worker("b", 4, true, 2, 64));
    int[] deep = tokens(100_000, 0);
    stored(r, "a", 0, java.util.Arrays.copyOf(deep, 90_000));
    Selection onA = r.select(req(1, null, deep), Set.of("b"));
    assertEquals(0, onA.candidate().rank());
    Selection onB = r.select(req(2, null, tokens(40_000, 1_000_000)), Set.of("a"));
    int idleOfB = 1 - onB.candidate().rank();
    stored(r, "b", idleOfB, tokens(400, 6_000_000));  // a/1's cache has more room: the tie-break counted in tokens
    Selection small = r.select(req(3, null, tokens(1000, 2_000_000)), Set.of());
    assertEquals("b", small.worker().id());
    assertEquals(idleOfB, small.candidate().rank());
    onA.release(Outcome.SUCCESS);
    onB.release(Outcome.SUCCESS);
  }

  /** Measures one completion: {@code worker} busy 1 s for a keyless 100-token request. */
  private void oneCompletion(AffinityRouter r, String worker) {
    oneCompletion(r, worker, java.time.Duration.ofSeconds(1));
  }

  private void oneCompletion(AffinityRouter r, String worker, java.time.Duration busy) {
    Selection s = r.select(req(500, null, tokens(100, 9_000_000)), Set.of(worker.equals("a") ? "b" : "a"));
    clock.advance(busy);
    s.release(Outcome.SUCCESS);
  }

  private String whereABigNewRequestGoes(double externalityWeight) {
    AffinityRouter r = router(Map.of("predict_ttl_seconds", 0.0, "queue_externality_weight", externalityWeight), "a", "b");
    oneCompletion(r, "a");
    // three other sessions send to a, one to b
    for (String key : List.of("s1", "s2", "s3")) {
      r.select(req(key.hashCode(), key, tokens(64, key.hashCode())), Set.of("b")).release(Outcome.SUCCESS);
    }
    r.select(req(600, "t1", tokens(64, 600)), Set.of("a")).release(Outcome.SUCCESS);
    stored(r, "b", -1, tokens(400, 7_000_000));  // a has more room: the tie-break without the externality
    return r.select(req(700, null, tokens(10_000, 8_000_000)), Set.of()).worker().id();
  }

  @Test
  void aBigRequestGoesWhereFewerOtherSessionsWillWaitBehindIt() {
    assertEquals("b", whereABigNewRequestGoes(1.0), "three sessions would wait behind it on a, one on b");
    assertEquals("a", whereABigNewRequestGoes(0.0), "without the externality: the roomier cache");
  }

  @Test
  void aHugeRequestIsNotChargedMoreThanTheOtherSessionsWouldPayToMove() {
    // a holds a 100,000-token prefill already; b has three small sessions (64-token contexts). A second 100,000-token
    // request would delay them a lot, but each of them would rather move (64 units) than wait: it goes to b, not
    // behind the first one on a
    AffinityRouter r = router(Map.of("predict_ttl_seconds", 0.0), "a", "b");
    oneCompletion(r, "b");
    for (String key : List.of("s1", "s2", "s3")) {
      r.select(req(key.hashCode(), key, tokens(64, key.hashCode())), Set.of("a")).release(Outcome.SUCCESS);
    }
    Selection first = r.select(req(800, null, tokens(100_000, 8_000_000)), Set.of("b"));
    assertEquals("b", r.select(req(801, null, tokens(100_000, 9_000_000)), Set.of()).worker().id());
    first.release(Outcome.SUCCESS);
  }

  /**
   * A session with a 40,000-token context cached on a/1 calls again while a 100,000-token prefill runs on a/0 (13
   * iterations of about 25,000 units). This call alone waits one of those iterations, less than prefilling its
   * context elsewhere (75,000): a session seen for the first time stays. A session that calls often pays that wait at
   * each call until a/0 is done, more than moving once: it moves.
   */
  private String whereASessionNextToALongPrefillGoes(int earlierCalls) {
    AffinityRouter r = (AffinityRouter) create("affinity", Map.of("predict_ttl_seconds", 0.0,
        "queue_externality_weight", 0.0), context(Fleet.CONTEXT, clock));
    r.addWorker(worker("a", 4, true, 2, 64));
    r.addWorker(worker("b", 4, true, 2, 64));
    // a slow rank: 1,000 s for 100 units, so that the five calls below (completed at once) leave it at ~2.7 ms a unit
    oneCompletion(r, "b", java.time.Duration.ofSeconds(1000));
    int[] context = tokens(40_000, 3_000_000);
    for (int i = 0; i < earlierCalls; i++) {
      r.select(req(900 + i, "s", context), Set.of("b")).release(Outcome.SUCCESS);  // five calls within the window
    }
    stored(r, "a", 1, context);
    Selection giant = r.select(req(950, null, tokens(100_000, 4_000_000)), Set.of("b"));
    if (giant.candidate().rank() != 0) {  // the giant goes to a/0 in this setting
      throw new IllegalStateException("set-up: " + giant.candidate());
    }
    int[] next = java.util.Arrays.copyOf(context, 40_100);
    Selection s = r.select(req(960, "s", next), Set.of());
    giant.release(Outcome.SUCCESS);
    return s.candidate().toString();
  }

  @Test
  void aSessionThatCallsOftenLeavesTheSiblingOfALongPrefill() {
    assertEquals("a#1", whereASessionNextToALongPrefillGoes(0), "no rate of its own yet: one iteration's wait");
    assertEquals("b", whereASessionNextToALongPrefillGoes(5).substring(0, 1), "its next calls would wait too");
  }

  /**
   * Two instances of two ranks, a rank doing 100 units of work in 10 ms. On a/1 one session with a 300,000-token
   * context has called five times in the rate window; on b/0 two such sessions have called once each. A new
   * 150,000-token prefill (645k units, 19 iterations of ~34k, about a window long) costs the same on a/0 and b/1; what
   * differs is who waits beside it. Each session's first call waits one of its iterations either way (one session on
   * a, two on b), but the session on a comes back about five times meanwhile and waits at each call: counted at
   * every call ({@code sibling_wait: every_call}) the prefill goes to b/1; counted once, to a/0.
   */
  private String whereALongPrefillGoesBesideSessions(String siblingWait) {
    AffinityRouter r = (AffinityRouter) create("affinity", Map.of("predict_ttl_seconds", 0.0,
        "sibling_wait", siblingWait), context(Fleet.CONTEXT, clock));
    r.addWorker(worker("a", 4, true, 2, 64));
    r.addWorker(worker("b", 4, true, 2, 64));
    oneCompletion(r, "b", java.time.Duration.ofMillis(10));
    int[] often = tokens(300_000, 10_000_000);
    stored(r, "a", 1, often);
    for (int k = 0; k < 5; k++) {
      Selection call = r.select(req(40 + k, "often", often), Set.of("b"));
      if (call.candidate().rank() != 1) {
        throw new IllegalStateException("set-up: went to " + call.candidate());
      }
      call.release(Outcome.SUCCESS);
    }
    for (int k = 0; k < 2; k++) {
      int[] context = tokens(300_000, 20_000_000 * (k + 1));
      stored(r, "b", 0, context);
      r.select(req(50 + k, "once" + k, context), Set.of("a")).release(Outcome.SUCCESS);
    }
    Selection prefill = r.select(req(60, null, tokens(150_000, 70_000_000)), Set.of());
    prefill.release(Outcome.SUCCESS);
    return prefill.candidate().toString();
  }

  @Test
  void aLongPrefillAvoidsTheSiblingOfASessionThatWillCallOftenWhileItRuns() {
    assertEquals("b#1", whereALongPrefillGoesBesideSessions("every_call"));
    assertEquals("a#0", whereALongPrefillGoesBesideSessions("once"));
  }

  @Test
  void siblingWaitIsEveryCallOrOnce() {
    RouterArgs args = RouterArgs.of("affinity", Map.of("sibling_wait", "half"));
    dev.affinity.config.ConfigException e = org.junit.jupiter.api.Assertions.assertThrows(
        dev.affinity.config.ConfigException.class, () -> AffinityRouterSettings.of(context(Fleet.CONTEXT, clock), args));
    org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().contains("sibling_wait"), e.getMessage());
    org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().contains("every_call, once"), e.getMessage());
    assertEquals(true, AffinityRouterSettings.of(context(Fleet.CONTEXT, clock), RouterArgs.of("affinity", Map.of()))
        .siblingWaitEveryCall(), "every call by default");
  }

  @Test
  void aSessionIsNotChargedForWaitingBehindItself() {
    // a session whose home is a, where nobody else sends, keeps going home with its big uncached turns: its own
    // arrival rate there is no one else's wait
    AffinityRouter r = router(Map.of("predict_ttl_seconds", 0.0), "a", "b");
    oneCompletion(r, "b");
    r.select(req(601, "other", tokens(64, 601)), Set.of("a")).release(Outcome.SUCCESS);
    Selection home = r.select(req(602, "me", tokens(64, 602)), Set.of("b"));
    home.release(Outcome.SUCCESS);
    for (int i = 0; i < 3; i++) {
      Selection s = r.select(req(610 + i, "me", tokens(10_000, 610_000 + i * 20_000)), Set.of());
      assertEquals("a", s.worker().id());
      s.release(Outcome.SUCCESS);
    }
  }

  @Test
  void aRequestWithoutAKeyGoesWhereTheCacheHasRoomAmongNearEqualCosts() {
    // every prompt starts with the same 32 tokens, cached on a only; b's cache is empty. Within the placement
    // tolerance (10% of the prompt) the emptier cache wins, so b is not starved by a shared first block.
    AffinityRouter r = router(Map.of("predict_ttl_seconds", 0.0), "a", "b");
    int[] shared = tokens(32, 0);
    int[] other = tokens(2000, 900_000);
    stored(r, "a", 0, other);
    int[] prompt = tokens(1000, 50_000);
    System.arraycopy(shared, 0, prompt, 0, 32);
    stored(r, "a", 0, shared);
    Selection s = r.select(req(1, null, prompt), Set.of());
    assertEquals("b", s.worker().id(), "32 cached tokens of 1,000 are within the tolerance");
    assertEquals(DecisionReason.LOAD, s.reason());
    s.release(Outcome.FAILURE);
    // a prefix beyond the tolerance still wins
    int[] longer = tokens(1000, 70_000);
    stored(r, "a", 0, java.util.Arrays.copyOf(longer, 400));
    Selection t = r.select(req(2, null, longer), Set.of());
    assertEquals("a", t.worker().id());
    assertEquals(DecisionReason.PREFIX, t.reason());
  }

  @Test
  void aMoveIntoAFullCacheCountsWhatItEvicts() {
    // k's 4,000-token prompt has 3,900 tokens cached on a, behind ~5,900 tokens of queued work; b is idle but its
    // cache is full (it evicted at 1,000 blocks and holds 999). Moving prefills 4,352 token-equivalents on b and
    // evicts 3,996 cached tokens there, which someone prefills again: with that counted, staying is cheaper.
    assertEquals("a", whereAFullCacheCaseGoes(1.0).worker().id());
    assertEquals(DecisionReason.PINNED, whereAFullCacheCaseGoes(1.0).reason());
    Selection free = whereAFullCacheCaseGoes(0.0);
    assertEquals("b", free.worker().id(), "without the eviction term the idle rank wins");
    assertEquals(DecisionReason.PIN_BROKEN, free.reason());
  }

  private Selection whereAFullCacheCaseGoes(double evictionWeight) {
    AffinityRouter r = router(Map.of("predict_ttl_seconds", 0.0, "eviction_weight", evictionWeight), "a", "b");
    int[] prompt = tokens(4000, 0);
    stored(r, "a", 0, java.util.Arrays.copyOf(prompt, 3900));
    Selection pin = r.select(req(1, "k", prompt), Set.of());
    assertEquals("a", pin.worker().id());
    pin.release(Outcome.SUCCESS);
    int[] other = tokens(4000, 1_000_000);
    stored(r, "b", 0, other);
    long[] otherKeys = new BlockHasher(HashAlgorithm.V1_BLOCK_KEY, 4).keys(other, null);
    r.onKvEvents("b", List.of(new dev.affinity.executor.KvEvent(2, dev.affinity.executor.KvEventType.REMOVED, 0, 0,
        false, 0, new long[] {otherKeys[999]}, null, 0, 0)));
    r.select(req(2, null, tokens(5300, 2_000_000)), Set.of("b"));  // queued on a, never released
    return r.select(req(3, "k", prompt), Set.of());
  }

  @Test
  void generationARankBesideABusyOneCostsWhatItsSiblingCarries() {
    // a decode iteration of an instance lasts as long as its busiest rank's: the empty rank beside a 10,000-token
    // sequence is not free, so a small request goes to the other instance, whose ranks carry 100 tokens each
    AffinityRouter r = (AffinityRouter) create("affinity", Map.of(), context(Fleet.GENERATION, clock));
    r.addWorker(worker("a", 4, true, 2, 64));
    r.addWorker(worker("b", 4, true, 2, 64));
    Selection big = r.select(generation(1, 10_000), Set.of());
    String busy = big.worker().id();
    String other = busy.equals("a") ? "b" : "a";
    Selection s2 = r.select(generation(2, 100), Set.of(busy));
    Selection s3 = r.select(generation(3, 100), Set.of(busy));
    assertNotEquals(s2.rank(), s3.rank(), "the two small ones take one rank each");
    Selection next = r.select(generation(4, 100), Set.of());
    assertEquals(other, next.worker().id(), "not the empty rank beside the busy one");
  }

  private static RoutingRequest generation(long id, int tokens) {
    return RoutingRequest.builder(id, Fleet.GENERATION).tokens(tokens(tokens, (int) id * 100_000)).maxNewTokens(16)
        .build();
  }

  @Test
  void twoIndependentRoutersAgreeOnNewKeys() {
    AffinityRouter one = router(Map.of(), "w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7");
    AffinityRouter two = router(Map.of(), "w7", "w6", "w5", "w4", "w3", "w2", "w1", "w0");  // other order
    Map<String, Integer> spread = new HashMap<>();
    for (int i = 0; i < 200; i++) {
      String key = "session-" + i;
      Selection a = one.select(req(i, key), Set.of());
      Selection b = two.select(req(i, key), Set.of());
      assertEquals(a.worker().id(), b.worker().id(), key);
      a.release(Outcome.FAILURE);
      b.release(Outcome.FAILURE);
      spread.merge(a.worker().id(), 1, Integer::sum);
    }
    assertEquals(8, spread.size(), "rendezvous spreads keys over every worker: " + spread);
  }

  @Test
  void ranksAreChosenWhenVisible() {
    AffinityRouter r = (AffinityRouter) create("affinity", Map.of(), context(Fleet.CONTEXT, clock));
    r.addWorker(worker("a", 4, true, 2, 64));
    r.addWorker(worker("b", 4, true, 2, 64));
    Set<String> seen = new HashSet<>();
    List<Selection> live = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      Selection s = r.select(req(i, null, tokens(128, i * 1000)), Set.of());
      assertTrue(s.rank() == 0 || s.rank() == 1);
      seen.add(s.candidate().toString());
      live.add(s);
    }
    assertEquals(4, seen.size(), "four requests spread over the four (worker, rank) pairs: " + seen);
  }

  @Test
  void generationVariantBalancesSlotsAndPinsOnlyWithScopeBoth() {
    for (SubagentScope scope : SubagentScope.values()) {
      AffinityRouter r = (AffinityRouter) create("affinity", Map.of(), context(Fleet.GENERATION, scope, clock));
      r.addWorker(worker("a"));
      r.addWorker(worker("b"));
      List<String> picks = new ArrayList<>();
      List<Selection> live = new ArrayList<>();
      for (int i = 0; i < 6; i++) {
        Selection s = r.select(RoutingRequest.builder(i, Fleet.GENERATION).routingKey("parent").tokens(tokens(100, 0))
            .maxNewTokens(100).build(), Set.of());
        picks.add(s.worker().id());
        live.add(s);
      }
      long onA = picks.stream().filter("a"::equals).count();
      if (scope == SubagentScope.CONTEXT) {
        assertEquals(3, onA, "siblings spread over decode slots: " + picks);
      } else {
        assertTrue(onA >= 4 || onA <= 2, "scope both keeps siblings together within the bound: " + picks);
      }
    }
  }
}
