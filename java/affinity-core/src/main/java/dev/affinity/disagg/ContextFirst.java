package dev.affinity.disagg;

import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.routing.Selection;
import dev.affinity.worker.EncodedResponse;
import java.util.Optional;

/**
 * Context-first, TensorRT-LLM's default: the context leg runs first (never streamed); its response's
 * {@code disaggregated_params} (first token, context request id, opaque KV state, rank) go into the
 * generation leg, which answers the client. A context that already finished the request (a stop on its
 * first token) is the answer itself; no generation leg runs.
 */
final class ContextFirst implements Schedule {

  @Override
  public void start(RequestFlow flow) {
    if (!flow.generation().mayServe()) {
      // no generation worker is alive: refuse now, not after the context leg has prefilled the prompt
      flow.finishWithError(503, "no generation worker available: the generation fleet has no live worker");
      return;
    }
    Selection sel = flow.context().select();
    if (sel == null) {
      return;
    }
    DisaggregatedParams params = DisaggregatedParams.builder(DisaggRequestType.CONTEXT_ONLY)
        .disaggRequestId(flow.requestId()).scheduleStyle(flow.inputs().style()).conversationId(flow.inputs().conversationId()).build();
    flow.sendContext(sel, params, (s, report) -> contextDone(flow, s));
  }

  private static void contextDone(RequestFlow flow, Selection sel) {
    EncodedResponse ctx = flow.context().response();
    if (ctx == null) {
      flow.finishWithError(502, "context worker " + sel.worker().id() + " returned no response");
      return;
    }
    Optional<DisaggregatedParams> handoff = ctx.firstDisaggregatedParams();
    if (finishedInContext(ctx) || handoff.isEmpty()) {
      flow.deliverWhole(ctx);
      return;
    }
    flow.holdContext(sel.worker(), handoff.get());
    Selection gen = flow.generation().takeReserved();
    if (gen == null) {
      gen = flow.generation().select();
    }
    if (gen != null) {
      flow.sendGeneration(gen, generationParams(flow, ctx, handoff.get()), ctx.promptTokenIds());
    }
  }

  /** The generation leg's params: the context's hand-off params and usage (its prompt is the ids the context saw). */
  private static DisaggregatedParams generationParams(RequestFlow flow, EncodedResponse ctx, DisaggregatedParams handoff) {
    return handoff.toBuilder().requestType(DisaggRequestType.GENERATION_ONLY)
        .scheduleStyle(flow.inputs().style()).conversationId(flow.inputs().conversationId()).ctxUsage(ctx.usage())
        .disaggRequestId(flow.requestId()).build();
  }

  /** Whether a response ended in the context phase: a finish reason other than length or not_finished. */
  static boolean finishedInContext(EncodedResponse response) {
    Optional<String> finish = response.firstFinishReason();
    return finish.isPresent() && !finish.get().equals("length") && !finish.get().equals("not_finished");
  }
}
