package dev.affinity.disagg;

import dev.affinity.routing.Fleet;
import dev.affinity.routing.Selection;

/**
 * Conditional disaggregation (upstream's {@code conditional_disagg_config}): the generation worker is
 * chosen first; when it already holds all but at most {@code max_local_prefill_length} of the prompt's
 * tokens it serves the whole request alone, else the request runs context-first with that generation
 * worker reserved.
 */
final class ConditionalDisagg implements Schedule {
  private final int maxLocalPrefillLength;
  private final ContextFirst contextFirst;

  ConditionalDisagg(int maxLocalPrefillLength, ContextFirst contextFirst) {
    this.maxLocalPrefillLength = maxLocalPrefillLength;
    this.contextFirst = contextFirst;
  }

  @Override
  public Step next(AttemptView a) {
    Selection gen = a.generation().selection();
    if (gen == null) {
      return new Step.Select(Fleet.GENERATION);
    }
    if (a.context().selection() == null && servesAlone(gen)) {
      return a.generation().sent() ? Step.WAIT : new Step.SendGeneration(null, null, null);
    }
    return contextFirst.next(a);
  }

  /** Whether the generation worker holds all but at most {@code max_local_prefill_length} of the prompt. */
  private boolean servesAlone(Selection gen) {
    int uncached = gen.request().numTokens() - gen.matchedTokens();
    return gen.matchedTokens() > 0 && uncached <= maxLocalPrefillLength;
  }
}
