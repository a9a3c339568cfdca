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
  private final ContextFirst contextFirst;

  ConditionalDisagg(ContextFirst contextFirst) {
    this.contextFirst = contextFirst;
  }

  @Override
  public void start(RequestFlow flow) {
    Selection gen = flow.generation().select();
    if (gen == null) {
      return;
    }
    int promptTokens = flow.inputs().tokens() != null ? flow.inputs().tokens().length : flow.routing(Fleet.GENERATION).numTokens();
    int uncached = promptTokens - gen.matchedTokens();
    if (gen.matchedTokens() == 0 || uncached > flow.settings().maxLocalPrefillLength()) {
      flow.generation().reserve(gen);
      contextFirst.start(flow);
      return;
    }
    flow.sendGeneration(gen, null, null);
  }
}
