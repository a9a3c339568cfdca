package dev.affinity.nativebridge;

import static dev.affinity.nativebridge.SimTestSupport.SMALL_VIRTUAL;
import static dev.affinity.nativebridge.SimTestSupport.finalOf;
import static dev.affinity.nativebridge.SimTestSupport.runUntilIdle;
import static dev.affinity.nativebridge.SimTestSupport.tokens;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.executor.ContextPhaseParams;
import dev.affinity.executor.ExecutorErrorKind;
import dev.affinity.executor.ExecutorRequest;
import dev.affinity.executor.ExecutorResponse;
import dev.affinity.executor.FinishReason;
import dev.affinity.executor.RequestType;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CancellationException;
import org.junit.jupiter.api.Test;

/** Hand-off domains: one per fleet; executors and generation-first waiters of two fleets stay apart. */
class HandoffDomainTest {
  static final int[] PROMPT = tokens(17, 500);

  /** A held context on ctx; returns its context phase params. */
  private static ContextPhaseParams holdContext(NativeExecutor ctx) {
    long id = ctx.enqueue(ExecutorRequest.builder(PROMPT, 1).clientRequestId(9).seed(5).type(RequestType.CONTEXT_ONLY)
        .build());
    ContextPhaseParams cp = finalOf(runUntilIdle(ctx), id).contextPhase();
    assertEquals(1, ctx.iterationStats().heldContexts());
    return cp;
  }

  private static ExecutorResponse generate(NativeExecutor gen, ContextPhaseParams cp) {
    long id = gen.enqueue(ExecutorRequest.builder(PROMPT, 4).clientRequestId(9).seed(5).contextPhase(cp).build());
    return finalOf(runUntilIdle(gen), id);
  }

  @Test
  void aGenerationRequestCannotPullAContextOfAnotherFleet() {
    try (HandoffDomain fleetA = new HandoffDomain(); HandoffDomain fleetB = new HandoffDomain();
        NativeExecutor ctxA = NativeExecutor.create("sim", SMALL_VIRTUAL, fleetA);
        NativeExecutor genA = NativeExecutor.create("sim", SMALL_VIRTUAL, fleetA);
        NativeExecutor genB = NativeExecutor.create("sim", SMALL_VIRTUAL, fleetB)) {
      assertEquals(2, fleetA.executorCount());
      assertEquals(1, fleetB.executorCount());
      ContextPhaseParams cp = holdContext(ctxA);
      ExecutorResponse other = generate(genB, cp);
      assertEquals(FinishReason.ERROR, other.finishReason());
      assertEquals(ExecutorErrorKind.CONTEXT_NOT_FOUND, other.errorKind());
      assertTrue(other.errorMessage().contains("outside this executor's hand-off domain"), other.errorMessage());
      assertEquals(1, ctxA.iterationStats().heldContexts(), "fleet B did not touch fleet A's context");
      ExecutorResponse own = generate(genA, cp);
      assertEquals(FinishReason.LENGTH, own.finishReason(), own::toString);
      assertEquals(ExecutorErrorKind.NONE, own.errorKind());
      assertEquals(0, ctxA.iterationStats().heldContexts(), "fleet A's pull freed it");
    }
  }

  @Test
  void anExecutorWithoutADomainCannotPullAnotherExecutorsContext() {
    try (HandoffDomain fleet = new HandoffDomain();
        NativeExecutor ctx = NativeExecutor.create("sim", SMALL_VIRTUAL, fleet);
        NativeExecutor loner = NativeExecutor.create("sim", SMALL_VIRTUAL)) {
      ExecutorResponse r = generate(loner, holdContext(ctx));
      assertEquals(ExecutorErrorKind.CONTEXT_NOT_FOUND, r.errorKind());
      assertTrue(r.errorMessage().contains("no hand-off domain"), r.errorMessage());
      assertEquals(1, ctx.iterationStats().heldContexts());
    }
  }

  @Test
  void executorsOutliveAClosedDomainAndAClosedDomainTakesNoNewOnes() {
    long before = NativeBridge.liveObjectCount();
    HandoffDomain fleet = new HandoffDomain();
    assertEquals(0, fleet.executorCount(), "nothing native before the first executor");
    try (NativeExecutor ctx = NativeExecutor.create("sim", SMALL_VIRTUAL, fleet);
        NativeExecutor gen = NativeExecutor.create("sim", SMALL_VIRTUAL, fleet)) {
      ContextPhaseParams cp = holdContext(ctx);
      fleet.close();
      assertTrue(fleet.isClosed());
      assertThrows(IllegalStateException.class, () -> NativeExecutor.create("sim", SMALL_VIRTUAL, fleet));
      assertEquals(FinishReason.LENGTH, generate(gen, cp).finishReason(), "the executors still hand off");
      assertEquals(0, ctx.iterationStats().heldContexts());
    }
    assertEquals(before, NativeBridge.liveObjectCount(), "the domain and its executors are freed");
  }

  @Test
  void aGenerationFirstWaiterIsCompletedOnlyByItsOwnDomain() {
    ContextPhaseParams params = new ContextPhaseParams(7, 0, new int[] {1}, new byte[] {1, 2});
    try (HandoffDomain fleetA = new HandoffDomain(); HandoffDomain fleetB = new HandoffDomain()) {
      CompletableFuture<ContextPhaseParams> waiting = fleetA.awaitContext(42);
      fleetB.publishContext(42, params);
      assertFalse(waiting.isDone(), "fleet B's context with the same request id is not fleet A's");
      fleetA.publishContext(42, params);
      assertEquals(params, waiting.join());
      fleetA.forgetContext(42);
      fleetB.forgetContext(42);
      CompletableFuture<ContextPhaseParams> orphan = fleetA.awaitContext(43);
      fleetA.close();
      assertThrows(CancellationException.class, orphan::join, "closing the domain fails its waiters");
      assertTrue(fleetA.awaitContext(44).isCompletedExceptionally());
    }
  }
}
