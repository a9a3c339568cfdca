package dev.affinity.disagg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.when;

import dev.affinity.disagg.AttemptView.LegView;
import dev.affinity.protocol.CompletionChoice;
import dev.affinity.protocol.CompletionResponse;
import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.DisaggScheduleStyle;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.TokenIds;
import dev.affinity.protocol.UsageInfo;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.RoutingRequest;
import dev.affinity.routing.Selection;
import dev.affinity.worker.EncodedResponse;
import dev.affinity.worker.Worker;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The schedules as pure deciders: each attempt state, written as plain values, and the step it leads to. */
class ScheduleDecisionsTest {
  private static final long ID = 1234;
  private static final String CONV = "conv-1";
  private static final Selection CTX = selection("ctx0", 100, 0);
  private static final Selection GEN = selection("gen0", 100, 0);
  private static final DisaggregatedParams HANDOFF = DisaggregatedParams.builder(DisaggRequestType.CONTEXT_ONLY)
      .firstGenTokens(TokenIds.of(42)).ctxRequestId(777L).encodedOpaqueState("b3BhcXVl").disaggRequestId(ID).build();

  private final ContextFirst contextFirst = new ContextFirst(DisaggScheduleStyle.CONTEXT_FIRST, false);

  @Test
  void contextFirstRunsTheContextLegThenHandsItsKvToTheGenerationLeg() {
    LegView none = LegView.NONE;
    assertEquals(new Step.Select(Fleet.CONTEXT), contextFirst.decide(attempt(none, none, false)));
    Step send = contextFirst.decide(attempt(none.selected(CTX), none, false));
    DisaggregatedParams p = assertInstanceOf(Step.SendContext.class, send).params();
    assertEquals(DisaggRequestType.CONTEXT_ONLY, p.requestType());
    assertEquals(ID, p.disaggRequestId());
    assertEquals(DisaggScheduleStyle.CONTEXT_FIRST, p.scheduleStyle());
    assertEquals(CONV, p.conversationId());
    LegView sent = none.selected(CTX).sentNow();
    assertSame(Step.WAIT, contextFirst.decide(attempt(sent, none, false)), "the context leg runs");

    EncodedResponse answer = contextAnswer("length", HANDOFF);
    LegView done = sent.answered(answer).completedNow();
    assertEquals(new Step.HoldContext(HANDOFF), contextFirst.decide(attempt(done, none, false)));
    assertEquals(new Step.Select(Fleet.GENERATION), contextFirst.decide(attempt(done, none, true)));
    Step gen = contextFirst.decide(attempt(done, none.selected(GEN), true));
    Step.SendGeneration sg = assertInstanceOf(Step.SendGeneration.class, gen);
    assertEquals(DisaggRequestType.GENERATION_ONLY, sg.params().requestType());
    assertEquals(777L, sg.params().ctxRequestId(), "the context's hand-off goes on");
    assertEquals(ID, sg.params().disaggRequestId());
    assertEquals(answer.usage(), sg.params().ctxUsage(), "with the context's usage");
    assertEquals(answer.promptTokenIds(), sg.promptIds(), "and the prompt the context saw");
    LegView genSent = none.selected(GEN).sentNow();
    assertSame(Step.WAIT, contextFirst.decide(attempt(done, genSent, true)));
    assertSame(Step.DELIVER_ANSWER, contextFirst.decide(attempt(done, genSent.completedNow(), true)));
  }

  @Test
  void aContextThatFinishedTheRequestIsTheAnswer() {
    LegView sent = LegView.NONE.selected(CTX).sentNow();
    EncodedResponse stopped = contextAnswer("stop", HANDOFF);
    assertEquals(new Step.DeliverWhole(stopped),
        contextFirst.decide(attempt(sent.answered(stopped).completedNow(), LegView.NONE, false)));
    EncodedResponse noHandoff = contextAnswer("length", null);
    assertEquals(new Step.DeliverWhole(noHandoff),
        contextFirst.decide(attempt(sent.answered(noHandoff).completedNow(), LegView.NONE, false)));
    Step noAnswer = contextFirst.decide(attempt(sent.completedNow(), LegView.NONE, false));
    assertEquals(502, assertInstanceOf(Step.Fail.class, noAnswer).status());
  }

  @Test
  void contextFirstRefusesBeforeTheContextLegWhenNoGenerationWorkerCouldServe() {
    AttemptView noGeneration = new AttemptView(ID, LegView.NONE, LegView.NONE, false, false, false, CONV);
    Step.Fail fail = assertInstanceOf(Step.Fail.class, contextFirst.decide(noGeneration));
    assertEquals(503, fail.status());
  }

  @Test
  void generationFirstSendsTheGenerationLegThenTheContextItWaitsFor() {
    GenerationFirst schedule = new GenerationFirst();
    LegView none = LegView.NONE;
    assertEquals(new Step.Select(Fleet.CONTEXT), schedule.decide(attempt(none, none, false)));
    assertEquals(new Step.Select(Fleet.GENERATION), schedule.decide(attempt(none.selected(CTX), none, false)));
    Step first = schedule.decide(attempt(none.selected(CTX), none.selected(GEN), false));
    Step.SendGeneration sg = assertInstanceOf(Step.SendGeneration.class, first);
    assertEquals(ID, sg.params().ctxRequestId(), "the generation leg names the context by the request id");
    assertEquals(DisaggScheduleStyle.GENERATION_FIRST, sg.params().scheduleStyle());
    assertNull(sg.promptIds());
    LegView genSent = none.selected(GEN).sentNow();
    Step second = schedule.decide(attempt(none.selected(CTX), genSent, false));
    assertEquals(DisaggRequestType.CONTEXT_ONLY, assertInstanceOf(Step.SendContext.class, second).params().requestType());
    assertEquals(DisaggRequestType.CONTEXT_ONLY, assertInstanceOf(Step.SendContext.class,
        schedule.decide(attempt(none.selected(CTX), genSent.completedNow(), false))).params().requestType(),
        "the context follows the generation leg whatever it reported meanwhile");
    LegView ctxSent = none.selected(CTX).sentNow();
    assertSame(Step.WAIT, schedule.decide(attempt(ctxSent, genSent, false)));

    EncodedResponse stopped = contextAnswer("stop", HANDOFF);
    LegView ctxStopped = ctxSent.answered(stopped).completedNow();
    assertEquals(new Step.DeliverWhole(stopped), schedule.decide(attempt(ctxStopped, genSent, false)),
        "a context that finished the request answers it; the waiting generation leg is cancelled");
    assertSame(Step.WAIT, schedule.decide(new AttemptView(ID, ctxStopped, genSent, false, true, true, CONV)),
        "not once the client's stream has started");
    assertSame(Step.WAIT, schedule.decide(attempt(ctxSent.answered(contextAnswer("length", HANDOFF)).completedNow(),
        genSent, false)), "a context that hands over: the generation leg answers");
  }

  @Test
  void conditionalDisaggServesLocallyOnlyWhatTheGenerationWorkerAlmostHolds() {
    ConditionalDisagg schedule = new ConditionalDisagg(16, contextFirst);
    LegView none = LegView.NONE;
    assertEquals(new Step.Select(Fleet.GENERATION), schedule.decide(attempt(none, none, false)));

    LegView holding = none.selected(selection("gen0", 100, 90));  // 10 uncached tokens <= 16
    assertEquals(new Step.SendGeneration(null, null, null), schedule.decide(attempt(none, holding, false)));
    assertSame(Step.WAIT, schedule.decide(attempt(none, holding.sentNow(), false)));

    for (Selection far : List.of(selection("gen0", 100, 80), selection("gen0", 100, 0))) {
      LegView reserved = none.selected(far);
      assertEquals(new Step.Select(Fleet.CONTEXT), schedule.decide(attempt(none, reserved, false)),
          "context-first with the generation worker reserved");
      LegView done = none.selected(CTX).sentNow().answered(contextAnswer("length", HANDOFF)).completedNow();
      assertInstanceOf(Step.SendGeneration.class, schedule.decide(attempt(done, reserved, true)),
          "the reserved worker serves the generation leg");
    }
  }

  private static AttemptView attempt(LegView ctx, LegView gen, boolean held) {
    return new AttemptView(ID, ctx, gen, held, false, true, CONV);
  }

  static Selection selection(String worker, int promptTokens, int matchedTokens) {
    Worker w = mock(Worker.class);
    when(w.id()).thenReturn(worker);
    Selection s = mock(Selection.class);
    when(s.worker()).thenReturn(w);
    when(s.matchedTokens()).thenReturn(matchedTokens);
    when(s.request()).thenReturn(RoutingRequest.builder(ID, Fleet.GENERATION).tokens(new int[promptTokens]).build());
    return s;
  }

  private static EncodedResponse contextAnswer(String finish, DisaggregatedParams handoff) {
    return EncodedResponse.of(new CompletionResponse("cmpl-ctx", "text_completion", 1L, "m",
        List.of(new CompletionChoice(0, "A", null, null, finish, null, handoff, Map.of())),
        new UsageInfo(10, 1, 11, 4), TokenIds.of(1, 2, 3), Map.of()));
  }
}
