package dev.affinity.nativebridge;

import static dev.affinity.nativebridge.SimTestSupport.SMALL_VIRTUAL;
import static dev.affinity.nativebridge.SimTestSupport.finalOf;
import static dev.affinity.nativebridge.SimTestSupport.runUntilIdle;
import static dev.affinity.nativebridge.SimTestSupport.tokens;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.executor.ClockMode;
import dev.affinity.executor.ExecutorErrorKind;
import dev.affinity.executor.ExecutorException;
import dev.affinity.executor.ExecutorRequest;
import dev.affinity.executor.ExecutorResponse;
import dev.affinity.executor.FinishReason;
import dev.affinity.executor.KvEvent;
import dev.affinity.executor.KvEventType;
import dev.affinity.executor.RequestType;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The CPU executor's observable behaviour, end to end through JNI. */
class NativeExecutorTest {

  @Test
  void aggregatedRequestIsDeterministic() {
    try (NativeExecutor a = NativeExecutor.create("sim", SMALL_VIRTUAL);
        NativeExecutor b = NativeExecutor.create("sim", SMALL_VIRTUAL)) {
      ExecutorRequest req = ExecutorRequest.builder(tokens(10, 100), 6).clientRequestId(42).seed(7).build();
      long ia = a.enqueue(req);
      long ib = b.enqueue(req);
      ExecutorResponse ra = finalOf(runUntilIdle(a), ia);
      ExecutorResponse rb = finalOf(runUntilIdle(b), ib);
      assertEquals(FinishReason.LENGTH, ra.finishReason());
      assertEquals(6, ra.tokenCount());
      assertArrayEquals(ra.tokens(), rb.tokens());
      assertEquals(10, ra.metrics().promptTokens());
      assertEquals(6, ra.metrics().outputTokens());
      assertTrue(ra.metrics().firstTokenUs() > ra.metrics().arrivalUs());
      assertTrue(ra.metrics().finishUs() >= ra.metrics().firstTokenUs());
      assertTrue(ra.metrics().rank() == 0 || ra.metrics().rank() == 1);

      long ic = a.enqueue(req.toBuilder().seed(8).build());
      assertFalse(Arrays.equals(ra.tokens(), finalOf(runUntilIdle(a), ic).tokens()), "another seed, other tokens");
    }
  }

  @Test
  void streamingDeliversEveryTokenOnceInOrder() {
    try (NativeExecutor ex = NativeExecutor.create("sim", SMALL_VIRTUAL)) {
      ExecutorRequest req = ExecutorRequest.builder(tokens(9, 1), 5).clientRequestId(3).seed(1).build();
      long plain = ex.enqueue(req);
      int[] expected = finalOf(runUntilIdle(ex), plain).tokens();

      long id = ex.enqueue(req.toBuilder().streaming(true).build());
      List<ExecutorResponse> rs = runUntilIdle(ex);
      List<Integer> got = new ArrayList<>();
      int chunks = 0;
      for (ExecutorResponse r : rs) {
        if (r.requestId() == id) {
          chunks++;
          for (int t : r.tokens()) {
            got.add(t);
          }
        }
      }
      assertArrayEquals(expected, got.stream().mapToInt(Integer::intValue).toArray());
      assertTrue(chunks >= 5, "one response per token, then the final: " + chunks);
    }
  }

  @Test
  void contextToGenerationHandoffFreesContextKv() {
    String ctxCfg = SMALL_VIRTUAL;
    String genCfg = """
        {"clock": {"mode": "virtual"}, "num_ranks": 1, "tokens_per_block": 4, "kv_blocks_per_rank": 64,
         "timing": {"kv_bytes_per_token": 1000000, "transfer_bandwidth_bytes_per_s": 1e9, "transfer_latency_us": 100}}""";
    try (HandoffDomain fleet = new HandoffDomain(); NativeExecutor ctx = NativeExecutor.create("sim", ctxCfg, fleet);
        NativeExecutor gen = NativeExecutor.create("sim", genCfg, fleet)) {
      int[] prompt = tokens(17, 500);
      long ctxId = ctx.enqueue(ExecutorRequest.builder(prompt, 1).clientRequestId(9).seed(5)
          .type(RequestType.CONTEXT_ONLY).conversationId("conv-1").build());
      ExecutorResponse ctxResp = finalOf(runUntilIdle(ctx), ctxId);
      assertNotNull(ctxResp.contextPhase(), "context-only responses carry context phase params");
      assertEquals(ctxResp.metrics().rank(), ctxResp.contextPhase().ctxDpRank());
      assertEquals(1, ctxResp.tokenCount());
      int rank = ctxResp.metrics().rank();
      assertTrue(ctx.kvCacheStats(rank).usedNumBlocks() > 0, "KV held for the generation pull");
      assertEquals(17, ctx.kvCacheStats(rank).contextTokensComputed(), "the rank's prefilled tokens cross the boundary");
      assertEquals(1, ctx.iterationStats().heldContexts());

      long genId = gen.enqueue(ExecutorRequest.builder(prompt, 6).clientRequestId(9).seed(5)
          .contextPhase(ctxResp.contextPhase()).build());
      assertEquals(0, ctx.kvCacheStats(rank).usedNumBlocks(), "the pull frees the context KV");
      assertEquals(0, ctx.iterationStats().heldContexts());

      ExecutorResponse genResp = finalOf(runUntilIdle(gen), genId);
      assertEquals(FinishReason.LENGTH, genResp.finishReason(), genResp.toString());
      assertEquals(6, genResp.tokenCount());
      assertEquals(ctxResp.contextPhase().firstGenTokens()[0], genResp.tokens()[0]);
      // 100 us latency + 17 tokens x 1 MB / 1 GB/s = 17,000 us
      assertEquals(17_100, genResp.metrics().transferUs());

      // The same request run aggregated produces the same tokens.
      long aggId = gen.enqueue(ExecutorRequest.builder(prompt, 6).clientRequestId(9).seed(5).build());
      assertArrayEquals(genResp.tokens(), finalOf(runUntilIdle(gen), aggId).tokens());

      // A second pull of the same context is an error naming it.
      long again = gen.enqueue(ExecutorRequest.builder(prompt, 6).contextPhase(ctxResp.contextPhase()).build());
      ExecutorResponse err = finalOf(runUntilIdle(gen), again);
      assertTrue(err.isError());
      assertEquals(ExecutorErrorKind.CONTEXT_NOT_FOUND, err.errorKind());
      assertTrue(err.errorMessage().contains("unknown context request"), err.errorMessage());
    }
  }

  @Test
  void prefixReuseShowsInMetricsAndStats() {
    try (NativeExecutor ex = NativeExecutor.create("sim", SMALL_VIRTUAL)) {
      int[] first = tokens(40, 1000);
      int[] second = Arrays.copyOf(first, 48);
      for (int i = 40; i < 48; i++) {
        second[i] = 7000 + i;
      }
      long a = ex.enqueue(ExecutorRequest.builder(first, 2).adpRankHint(1, false).build());
      ExecutorResponse ra = finalOf(runUntilIdle(ex), a);
      assertEquals(0, ra.metrics().reusedTokens());
      long b = ex.enqueue(ExecutorRequest.builder(second, 2).adpRankHint(1, false).build());
      ExecutorResponse rb = finalOf(runUntilIdle(ex), b);
      assertEquals(1, rb.metrics().rank());
      // The first request stored 10 full blocks of its prompt (and one of prompt + output); the
      // second matches its 40 shared tokens = 10 blocks of 4.
      assertEquals(40, rb.metrics().reusedTokens());
      assertTrue(ex.kvCacheStats(1).reusedBlocks() >= 10);
      assertEquals(0, ex.kvCacheStats(0).allocTotalBlocks(), "rank 0 was never used");
      assertTrue(ex.iterationStats().totalReusedTokens() >= 40);
    }
  }

  @Test
  void rankHintOverflowIsReportedTruthfully() {
    String cfg = """
        {"clock": {"mode": "virtual"}, "num_ranks": 2, "tokens_per_block": 4, "kv_blocks_per_rank": 64,
         "max_batch_size": 4, "max_num_active_requests": 1}""";
    try (NativeExecutor ex = NativeExecutor.create("sim", cfg)) {
      long a = ex.enqueue(ExecutorRequest.builder(tokens(8, 1), 4).adpRankHint(0, false).build());
      long b = ex.enqueue(ExecutorRequest.builder(tokens(8, 50), 4).adpRankHint(0, true).build());
      List<ExecutorResponse> rs = runUntilIdle(ex);
      assertEquals(0, finalOf(rs, a).metrics().rank(), "the strict hint is placed first");
      assertEquals(1, finalOf(rs, b).metrics().rank(), "rank 0 was full: the request overflowed to rank 1");
    }
  }

  @Test
  void badInputIsAnsweredWithErrorsNamingTheProblem() {
    String cfg = """
        {"clock": {"mode": "virtual"}, "num_ranks": 2, "tokens_per_block": 4, "kv_blocks_per_rank": 8}""";
    try (NativeExecutor ex = NativeExecutor.create("sim", cfg)) {
      long empty = ex.enqueue(ExecutorRequest.builder(new int[0], 4).build());
      long zeroMax = ex.enqueue(ExecutorRequest.builder(tokens(4, 1), 0).build());
      long badRank = ex.enqueue(ExecutorRequest.builder(tokens(4, 1), 4).adpRankHint(5, true).build());
      long noParams = ex.enqueue(ExecutorRequest.builder(tokens(4, 1), 4).type(RequestType.GENERATION_ONLY).build());
      long tooBig = ex.enqueue(ExecutorRequest.builder(tokens(40, 1), 4).build());
      long negative = ex.enqueue(ExecutorRequest.builder(new int[] {1, -2, 3}, 4).build());
      List<ExecutorResponse> rs = runUntilIdle(ex);
      assertError(rs, empty, "input_token_ids is empty", ExecutorErrorKind.BAD_REQUEST);
      assertError(rs, zeroMax, "max_new_tokens must be > 0", ExecutorErrorKind.BAD_REQUEST);
      assertError(rs, badRank, "attention_dp_rank 5 is out of range [0, 2)", ExecutorErrorKind.BAD_REQUEST);
      assertError(rs, noParams, "without context phase params", ExecutorErrorKind.BAD_REQUEST);
      assertError(rs, tooBig, "needs 11 KV blocks but a rank holds only 8", ExecutorErrorKind.CAPACITY);
      assertError(rs, negative, "token id -2 at position 1 is negative", ExecutorErrorKind.BAD_REQUEST);
      assertEquals(0, ex.iterationStats().activeRequests());
    }
  }

  private static void assertError(List<ExecutorResponse> rs, long id, String expected, ExecutorErrorKind kind) {
    ExecutorResponse r = finalOf(rs, id);
    assertEquals(FinishReason.ERROR, r.finishReason());
    assertEquals(kind, r.errorKind(), r::toString);
    assertTrue(r.errorMessage().contains(expected), () -> "'" + r.errorMessage() + "' lacks '" + expected + "'");
  }

  @Test
  void cancellationEndsTheRequestAndFreesItsKv() {
    try (NativeExecutor ex = NativeExecutor.create("sim", SMALL_VIRTUAL)) {
      long id = ex.enqueue(ExecutorRequest.builder(tokens(12, 1), 100).adpRankHint(0, false).build());
      ex.advanceTo(ex.nextIterationEndMicros());
      assertTrue(ex.kvCacheStats(0).usedNumBlocks() > 0);
      ex.cancel(id);
      ex.cancel(987654);  // unknown: no-op
      List<ExecutorResponse> rs = runUntilIdle(ex);
      ExecutorResponse f = finalOf(rs, id);
      assertEquals(FinishReason.CANCELLED, f.finishReason());
      assertEquals(0, ex.kvCacheStats(0).usedNumBlocks());
    }
  }

  @Test
  void kvEventsHaveTheShapeOfTensorRtLlmEvents() {
    try (NativeExecutor ex = NativeExecutor.create("sim", SMALL_VIRTUAL)) {
      List<KvEvent> created = ex.drainKvEvents(100);
      assertEquals(2, created.size());
      for (KvEvent e : created) {
        assertEquals(KvEventType.CREATED, e.type());
        assertEquals(64, e.value());
      }
      long id = ex.enqueue(ExecutorRequest.builder(tokens(17, 1), 1).adpRankHint(1, false).build());
      finalOf(runUntilIdle(ex), id);
      List<KvEvent> events = ex.drainKvEvents(100);
      KvEvent stored = events.stream().filter(e -> e.type() == KvEventType.STORED).findFirst().orElseThrow();
      assertEquals(1, stored.rank());
      assertFalse(stored.hasParent(), "the chain starts at the root");
      assertEquals(4, stored.blockHashes().length, "17 prompt tokens = 4 full blocks of 4");
      assertArrayEquals(Arrays.copyOf(tokens(17, 1), 16), stored.tokens());
      assertTrue(stored.eventId() > created.get(1).eventId());
    }
  }

  @Test
  void virtualClockAdvancesOnlyWhenTold() {
    try (NativeExecutor ex = NativeExecutor.create("sim", SMALL_VIRTUAL)) {
      assertEquals(ClockMode.VIRTUAL, ex.clockMode());
      assertEquals(-1, ex.nextIterationEndMicros(), "idle");
      ex.advanceTo(1_000);
      assertEquals(1_000, ex.nowMicros());
      long id = ex.enqueue(ExecutorRequest.builder(tokens(8, 1), 2).build());
      long end = ex.nextIterationEndMicros();
      assertTrue(end > 1_000);
      assertTrue(ex.awaitResponses(10, Duration.ZERO).isEmpty(), "nothing happens before the clock moves");
      ExecutorResponse r = finalOf(runUntilIdle(ex), id);
      assertEquals(1_000, r.metrics().arrivalUs());
      assertEquals(end, r.metrics().firstTokenUs());
      ExecutorException past = assertThrows(ExecutorException.class, () -> ex.advanceTo(10));
      assertTrue(past.getMessage().contains("before the current time"), past.getMessage());
    }
  }

  @Test
  void executorErrorsBecomeJavaExceptionsWithTheNativeMessage() {
    ExecutorException badKey = assertThrows(ExecutorException.class,
        () -> NativeExecutor.create("sim", "{\"block_reuse\": {\"polcy\": \"per_request\"}}"));
    assertTrue(badKey.getMessage().contains("'block_reuse.polcy': unknown key"), badKey.getMessage());
    ExecutorException badType = assertThrows(ExecutorException.class, () -> NativeExecutor.create("sim", "{\"num_ranks\": \"two\"}"));
    assertTrue(badType.getMessage().contains("'num_ranks': expected an integer"), badType.getMessage());
    ExecutorException backend = assertThrows(ExecutorException.class, () -> NativeExecutor.create("tpu", "{}"));
    assertTrue(backend.getMessage().contains("unknown executor backend \"tpu\""), backend.getMessage());
    ExecutorException json = assertThrows(ExecutorException.class, () -> NativeExecutor.create("sim", "{nope"));
    assertTrue(json.getMessage().contains("malformed JSON"), json.getMessage());

    try (NativeExecutor real = NativeExecutor.create("sim", "{}")) {
      assertEquals(ClockMode.REAL, real.clockMode());
      ExecutorException e = assertThrows(ExecutorException.class, () -> real.advanceTo(5));
      assertTrue(e.getMessage().contains("virtual"), e.getMessage());
      assertThrows(IllegalArgumentException.class, () -> real.kvCacheStats(3));
      assertTrue(real.describe().contains("\"num_ranks\":1"), real.describe());
    }
  }

  @Test
  void closedExecutorRejectsCalls() {
    NativeExecutor ex = NativeExecutor.create("sim", SMALL_VIRTUAL);
    ex.close();
    ex.close();  // idempotent
    assertTrue(ex.isClosed());
    assertThrows(IllegalStateException.class, () -> ex.enqueue(ExecutorRequest.builder(tokens(4, 1), 1).build()));
    assertThrows(IllegalStateException.class, () -> ex.awaitResponses(1, Duration.ZERO));
  }

  @Test
  void shutdownAnswersEveryLiveRequestOnceAndRefusesNewOnes() {
    try (NativeExecutor ex = NativeExecutor.create("sim", SMALL_VIRTUAL)) {
      long[] ids = ex.enqueueAll(List.of(
          ExecutorRequest.builder(tokens(8, 1), 50).build(),
          ExecutorRequest.builder(tokens(8, 9), 50).build(),
          ExecutorRequest.builder(tokens(8, 17), 50).build()));
      ex.advanceTo(ex.nextIterationEndMicros());
      ex.shutdown();
      List<ExecutorResponse> rs = ex.awaitResponses(100, Duration.ZERO);
      for (long id : ids) {
        ExecutorResponse f = finalOf(rs, id);
        assertEquals(FinishReason.CANCELLED, f.finishReason());
        assertEquals(ExecutorErrorKind.CANCELLED, f.errorKind());
        assertTrue(f.errorMessage().contains("shut down"), f.errorMessage());
      }
      ExecutorException e = assertThrows(ExecutorException.class,
          () -> ex.enqueue(ExecutorRequest.builder(tokens(4, 1), 1).build()));
      assertTrue(e.getMessage().contains("shut down"), e.getMessage());
    }
  }
}
