package dev.affinity.disagg;

import dev.affinity.routing.Fleet;
import dev.affinity.routing.Selection;
import dev.affinity.worker.EncodedChunk;
import dev.affinity.worker.EncodedResponse;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerReport;

/**
 * What happens to one request, as its {@link RequestFlow} hears it through {@link RequestFlow#on}: a {@link Leg}'s
 * reports (a worker selected or none, a streamed chunk, the whole answer, the call completed or failed) and the
 * flow's own timers and callbacks (the request's timeout, the client gone, a retry's back-off over, a cut stream's
 * text tokenized). The reports of a call carry its attempt (request id): the flow ignores those of an attempt it has
 * moved past.
 */
sealed interface FlowEvent {
  /** The router chose {@code selection} for the current attempt's {@code fleet} leg. */
  record Selected(Fleet fleet, Selection selection) implements FlowEvent {}

  /** The router found no worker for the current attempt's {@code fleet} leg ({@code reason} says why). */
  record NoWorker(Fleet fleet, String reason) implements FlowEvent {}

  /** A streamed chunk of a call (after the stream's first chunk with a choice; those before it come with it). */
  record Chunk(Fleet fleet, long attempt, Selection selection, EncodedChunk chunk) implements FlowEvent {}

  /** A call's whole (non-streamed) answer, before its completion. */
  record Answer(Fleet fleet, long attempt, EncodedResponse answer) implements FlowEvent {}

  /** The worker finished a call, its answer holding what its leg needs ({@link AnswerContract}). */
  record Completed(Fleet fleet, long attempt, Selection selection, WorkerReport report) implements FlowEvent {}

  /** A call failed (an answer that broke its leg's contract included). */
  record Failed(Fleet fleet, long attempt, Selection selection, WorkerFailure failure) implements FlowEvent {}

  /** The request's budget is spent. */
  record TimedOut() implements FlowEvent {}

  /** The client went away before its answer was complete. */
  record Disconnected() implements FlowEvent {}

  /** The back-off before retrying {@code attempt} on the fleet's only live worker is over. */
  record BackoffOver(long attempt) implements FlowEvent {}

  /**
   * A worker tokenized a cut stream's text for the resume of {@code attempt}: the ids, or the error ({@code ids} null).
   */
  record Tokenized(long attempt, String workerId, int[] ids, Throwable error) implements FlowEvent {}
}
