package dev.affinity.disagg;

import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.DisaggScheduleStyle;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.routing.Fleet;
import dev.affinity.worker.EncodedResponse;
import java.util.Optional;

/**
 * Context-first, TensorRT-LLM's default: the context leg runs first (never streamed); its response's
 * {@code disaggregated_params} (first token, context request id, opaque KV state, rank) go into the
 * generation leg, which answers the client. A context that already finished the request (a stop on its
 * first token) is the answer itself; no generation leg runs. A generation worker chosen ahead (conditional
 * disaggregation's) serves the generation leg.
 */
final class ContextFirst implements Schedule {
  private final DisaggScheduleStyle style;
  /** Whether the context leg asks for its answer's prompt ids as base64 int32 (upstream's {@code gen_tokids_ctxbytes}). */
  private final boolean idsAsBase64;

  /**
   * {@code style}: what the legs announce in their {@code disaggregated_params}; {@code idsAsBase64}: the context leg
   * sets {@code return_prompt_token_ids_b64}.
   */
  ContextFirst(DisaggScheduleStyle style, boolean idsAsBase64) {
    this.style = style;
    this.idsAsBase64 = idsAsBase64;
  }

  @Override
  public Step next(AttemptView a) {
    AttemptView.LegView ctx = a.context();
    AttemptView.LegView gen = a.generation();
    if (gen.sent()) {
      return Step.WAIT;
    }
    if (ctx.completed()) {
      return afterContext(a, ctx);
    }
    if (ctx.sent()) {
      return Step.WAIT;
    }
    if (ctx.selection() == null) {
      // no generation worker is alive: refuse now, not after the context leg has prefilled the prompt
      return a.generationMayServe() ? new Step.Select(Fleet.CONTEXT)
          : new Step.Fail(503, "no generation worker available: the generation fleet has no live worker");
    }
    return new Step.SendContext(DisaggregatedParams.builder(DisaggRequestType.CONTEXT_ONLY)
        .disaggRequestId(a.requestId()).scheduleStyle(style).conversationId(a.conversationId())
        .returnPromptTokenIdsB64(idsAsBase64 ? Boolean.TRUE : null).build());
  }

  private Step afterContext(AttemptView a, AttemptView.LegView ctx) {
    EncodedResponse answer = ctx.answer();
    if (answer == null) {
      return new Step.Fail(502, "context worker " + ctx.selection().worker().id() + " returned no response");
    }
    Optional<DisaggregatedParams> handoff = answer.firstDisaggregatedParams();
    if (Schedule.finishedInContext(answer) || handoff.isEmpty()) {
      return new Step.DeliverWhole(answer);
    }
    if (!a.contextHeld()) {
      return new Step.HoldContext(handoff.get());
    }
    if (a.generation().selection() == null) {
      return new Step.Select(Fleet.GENERATION);
    }
    // the generation leg's params: the context's hand-off params and usage (its prompt is the ids the context saw)
    DisaggregatedParams params = handoff.get().toBuilder().requestType(DisaggRequestType.GENERATION_ONLY)
        .scheduleStyle(style).conversationId(a.conversationId()).ctxUsage(answer.usage())
        .disaggRequestId(a.requestId()).build();
    return new Step.SendGeneration(params, answer.promptTokenIds(), answer.promptTokenIdsB64());
  }
}
