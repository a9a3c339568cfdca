package dev.affinity.disagg;

import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.DisaggScheduleStyle;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.routing.Outcome;
import dev.affinity.routing.Selection;
import dev.affinity.worker.EncodedResponse;
import dev.affinity.worker.WorkerCall;

/**
 * Generation-first: both workers are chosen up front; the generation leg goes first and waits for the KV
 * of the context whose id it names (its own request id), then the context leg runs. When the context
 * already finished the request, its answer is delivered and the waiting generation leg is cancelled.
 */
final class GenerationFirst implements Schedule {

  @Override
  public void start(RequestFlow flow) {
    Selection ctx = flow.context().select();
    if (ctx == null) {
      return;
    }
    Selection gen = flow.generation().select();
    if (gen == null) {
      ctx.release(Outcome.CANCELLED);
      return;
    }
    long attempt = flow.requestId();
    DisaggregatedParams genParams = DisaggregatedParams.builder(DisaggRequestType.GENERATION_ONLY)
        .ctxRequestId(attempt).disaggRequestId(attempt).scheduleStyle(DisaggScheduleStyle.GENERATION_FIRST)
        .conversationId(flow.inputs().conversationId()).build();
    flow.sendGeneration(gen, genParams, null);
    if (attempt != flow.requestId()) {
      // The generation leg failed at once and the request was re-issued: this attempt's context leg is moot.
      ctx.release(Outcome.CANCELLED);
      return;
    }
    DisaggregatedParams ctxParams = DisaggregatedParams.builder(DisaggRequestType.CONTEXT_ONLY)
        .disaggRequestId(attempt).scheduleStyle(DisaggScheduleStyle.GENERATION_FIRST)
        .conversationId(flow.inputs().conversationId()).build();
    flow.sendContext(ctx, ctxParams, (s, report) -> contextDone(flow));
  }

  private static void contextDone(RequestFlow flow) {
    EncodedResponse ctx = flow.context().response();
    if (ctx != null && ContextFirst.finishedInContext(ctx) && !flow.streamStarted()) {
      WorkerCall waiting = flow.generation().detach();
      flow.deliverWhole(ctx);
      if (waiting != null) {
        waiting.cancel();
      }
    }
  }
}
