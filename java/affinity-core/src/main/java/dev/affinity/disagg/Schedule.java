package dev.affinity.disagg;

import dev.affinity.config.ScheduleStyle;
import dev.affinity.protocol.DisaggScheduleStyle;
import dev.affinity.worker.EncodedResponse;
import java.util.Optional;

/**
 * How one attempt of a request runs its legs, decided from plain values: given the attempt as it stands, the next
 * {@link Step}. The {@link RequestFlow} carries the step out and asks again after every change, for the first attempt
 * and for every retry (with a new request id, the failed workers excluded).
 */
interface Schedule {
  /** The attempt's next step: the client's answer once the generation leg completed, else {@link #next}. */
  default Step decide(AttemptView a) {
    return a.generation().completed() ? Step.DELIVER_ANSWER : next(a);
  }

  /** The schedule's own next step while the generation leg has not completed. */
  Step next(AttemptView a);

  /** The schedule a configuration asks for: conditional disaggregation, generation-first or context-first. */
  static Schedule of(DisaggSettings settings) {
    if (settings.conditional()) {
      return new ConditionalDisagg(settings.maxLocalPrefillLength(),
          new ContextFirst(style(settings), settings.idsAsBase64()));
    }
    return settings.scheduleStyle() == ScheduleStyle.GENERATION_FIRST
        ? new GenerationFirst()
        : new ContextFirst(style(settings), settings.idsAsBase64());
  }

  /** The schedule style the legs announce in their {@code disaggregated_params}. */
  static DisaggScheduleStyle style(DisaggSettings settings) {
    return settings.scheduleStyle() == ScheduleStyle.GENERATION_FIRST
        ? DisaggScheduleStyle.GENERATION_FIRST : DisaggScheduleStyle.CONTEXT_FIRST;
  }

  /** Whether a response ended in the context phase: a finish reason other than length or not_finished. */
  static boolean finishedInContext(EncodedResponse response) {
    Optional<String> finish = response.firstFinishReason();
    return finish.isPresent() && !finish.get().equals("length") && !finish.get().equals("not_finished");
  }
}
