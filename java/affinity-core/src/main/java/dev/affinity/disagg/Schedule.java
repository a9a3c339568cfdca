package dev.affinity.disagg;

import dev.affinity.config.ScheduleStyle;

/**
 * How one attempt of a request runs its legs. {@link #start} runs under the flow's lock, for the first
 * attempt and again for every retry (with a new request id, the failed workers excluded).
 */
interface Schedule {
  void start(RequestFlow flow);

  /** The schedule a configuration asks for: conditional disaggregation, generation-first or context-first. */
  static Schedule of(DisaggSettings settings) {
    if (settings.conditional()) {
      return new ConditionalDisagg(new ContextFirst());
    }
    return settings.scheduleStyle() == ScheduleStyle.GENERATION_FIRST
        ? new GenerationFirst() : new ContextFirst();
  }
}
