package dev.affinity.routing;

import java.util.Locale;

/** Why a router picked its worker (a Prometheus label). */
public enum DecisionReason {
  /** round robin turn */
  ROUND_ROBIN,
  /** least loaded */
  LOAD,
  /** best KV prefix match score */
  PREFIX,
  /** the affinity key's pinned worker */
  PINNED,
  /** soft first placement: a sub-agent's first turn on its root's pinned worker (it cost at most the margin more) */
  FOLLOWED_ROOT,
  /** a new affinity key placed */
  NEW_PIN,
  /** the pinned worker was removed, dead or excluded: a new pin */
  RE_PINNED,
  /** staying cost more than the margin (or broke the load bound): the pin moved */
  PIN_BROKEN,
  /** the content-affinity pin of kv_cache_aware */
  CONTENT_PIN,
  /** the conversation router's implicit prefix match */
  IMPLICIT_MATCH;

  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }
}
