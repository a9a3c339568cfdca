package dev.affinity.disagg;

import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.TokenIds;
import dev.affinity.routing.Fleet;
import dev.affinity.worker.EncodedResponse;

/**
 * What a request does next, as a {@link Schedule} or the {@link RetryPolicy} decides it from a view of the attempt;
 * the {@link RequestFlow} carries it out. Each step but {@link Wait} changes the attempt (a leg chosen or sent, a
 * context held, a plan made) or ends the request, so the flow asks again until the answer is to wait for a leg.
 */
sealed interface Step {
  Step WAIT = new Wait();
  Step DELIVER_ANSWER = new DeliverAnswer();
  Step PLAN_RESUME = new PlanResume();
  Step END_STREAM = new EndStream();

  /** Nothing to do until a leg reports. */
  record Wait() implements Step {}

  /** Ask {@code fleet}'s router for a worker (answered by {@link FlowEvent.Selected} or {@link FlowEvent.NoWorker}). */
  record Select(Fleet fleet) implements Step {}

  /** Send the context leg (never streamed) to the chosen context worker with these params. */
  record SendContext(DisaggregatedParams params) implements Step {}

  /** Keep the finished context's KV for the generation leg (freed if the request ends without one). */
  record HoldContext(DisaggregatedParams handoff) implements Step {}

  /**
   * Send the leg that answers the client to the chosen generation worker with these params (null: none, the worker
   * serves the whole request) and the prompt ids the context saw (null: the request's own), as a JSON array or as the
   * base64 int32 string its answer carried (relayed verbatim to a chat leg).
   */
  record SendGeneration(DisaggregatedParams params, TokenIds promptIds, String promptIdsB64) implements Step {}

  /** The context leg's answer is the whole answer (it finished the request): deliver it, cancel the rest. */
  record DeliverWhole(EncodedResponse answer) implements Step {}

  /** The generation leg completed: the client gets its answer (a stream's end, or the whole answer). */
  record DeliverAnswer() implements Step {}

  /** The request fails with this status and message (an error event when the stream has started). */
  record Fail(int status, String message) implements Step {}

  /**
   * A new attempt on other workers than the failed one's, counted as a retry; with {@code resumed}, a cut stream's
   * continuation, the legs are built from it from now on.
   */
  record Retry(StreamResume.Plan resumed) implements Step {}

  /** Plan how a cut stream could continue ({@link StreamResume#plan}). */
  record PlanResume() implements Step {}

  /** Tokenize a cut stream's text (the frontend's tokenizer, else a context worker's) and plan again with its ids. */
  record Tokenize(String text) implements Step {}

  /** A cut stream whose client already has the whole answer ends cleanly. */
  record EndStream() implements Step {}

  /**
   * A cut stream cannot go on: the failure ends it as its last event; {@code notResumed} says why it was not
   * continued when a resume was planned (null: none was).
   */
  record EndCutStream(String notResumed) implements Step {}
}
