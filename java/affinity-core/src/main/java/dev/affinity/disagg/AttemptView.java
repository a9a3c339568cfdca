package dev.affinity.disagg;

import dev.affinity.routing.Selection;
import dev.affinity.worker.EncodedResponse;

/**
 * What a {@link Schedule} decides from: one attempt of a request as it stands, immutable.
 *
 * @param requestId the attempt's disaggregated request id
 * @param context the context leg
 * @param generation the generation leg
 * @param contextHeld whether a finished context's KV is held for the generation leg
 * @param streamStarted whether the client's stream has started (this attempt's or an earlier one's)
 * @param generationMayServe whether the generation fleet could take a request (a live worker, or none known); read
 *     before the context leg is chosen, and false after
 * @param conversationId the request's own conversation id, or null
 */
record AttemptView(long requestId, LegView context, LegView generation, boolean contextHeld, boolean streamStarted,
    boolean generationMayServe, String conversationId) {

  /**
   * One leg of the attempt: the worker chosen (null: none yet), whether the leg was sent, whether its call completed,
   * and the call's whole answer (null when none came, or for a streamed leg).
   */
  record LegView(Selection selection, boolean sent, boolean completed, EncodedResponse answer) {
    static final LegView NONE = new LegView(null, false, false, null);

    LegView selected(Selection s) {
      return new LegView(s, sent, completed, answer);
    }

    LegView sentNow() {
      return new LegView(selection, true, completed, answer);
    }

    LegView answered(EncodedResponse r) {
      return new LegView(selection, sent, completed, r);
    }

    LegView completedNow() {
      return new LegView(selection, sent, true, answer);
    }
  }
}
