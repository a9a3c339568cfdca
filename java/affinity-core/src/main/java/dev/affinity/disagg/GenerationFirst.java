package dev.affinity.disagg;

import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.DisaggScheduleStyle;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.routing.Fleet;
import dev.affinity.worker.EncodedResponse;

/**
 * Generation-first: both workers are chosen up front; the generation leg goes first and waits for the KV
 * of the context whose id it names (its own request id), then the context leg runs. When the context
 * already finished the request (and the client's stream has not started), its answer is delivered and the
 * waiting generation leg is cancelled.
 */
final class GenerationFirst implements Schedule {

  /** The context leg follows the generation leg it feeds, whatever that leg reported meanwhile short of failing. */
  @Override
  public Step decide(AttemptView a) {
    if (a.generation().sent() && !a.context().sent()) {
      return new Step.SendContext(params(DisaggRequestType.CONTEXT_ONLY, a).build());
    }
    return Schedule.super.decide(a);
  }

  @Override
  public Step next(AttemptView a) {
    AttemptView.LegView ctx = a.context();
    AttemptView.LegView gen = a.generation();
    if (gen.sent()) {
      EncodedResponse answer = ctx.answer();
      if (ctx.completed() && answer != null && Schedule.finishedInContext(answer) && !a.streamStarted()) {
        return new Step.DeliverWhole(answer);
      }
      return Step.WAIT;
    }
    if (ctx.selection() == null) {
      return new Step.Select(Fleet.CONTEXT);
    }
    if (gen.selection() == null) {
      return new Step.Select(Fleet.GENERATION);
    }
    return new Step.SendGeneration(params(DisaggRequestType.GENERATION_ONLY, a).ctxRequestId(a.requestId()).build(),
        null, null);
  }

  private static DisaggregatedParams.Builder params(DisaggRequestType type, AttemptView a) {
    return DisaggregatedParams.builder(type).disaggRequestId(a.requestId())
        .scheduleStyle(DisaggScheduleStyle.GENERATION_FIRST).conversationId(a.conversationId());
  }
}
