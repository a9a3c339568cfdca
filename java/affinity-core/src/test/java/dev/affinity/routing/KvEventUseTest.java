package dev.affinity.routing;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.affinity.executor.KvEvent;
import dev.affinity.executor.KvEventType;
import dev.affinity.kv.PrefixIndex;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Which routers read KV events: exactly those that look prefixes up. The others ignore them (their
 * index stays empty), so that callers may spare the workers producing events.
 */
class KvEventUseTest {
  private static final KvEvent STORED = new KvEvent(1, KvEventType.STORED, 0, 0, false, 0, new long[] {11, 12, 13}, null, 0, 0);

  private static long indexedAfterEvents(String type, Fleet fleet) {
    PrefixIndex index = new PrefixIndex(1000);
    RouterContext ctx = new RouterContext(fleet, dev.affinity.config.SubagentScope.CONTEXT, System::nanoTime, index,
        RouterContext.DEFAULT_TTL, 0);
    Router r = RouterTestSupport.create(type, Map.of(), ctx);
    r.addWorker(RouterTestSupport.worker("w"));
    r.onKvEvents("w", List.of(STORED));
    assertEquals(index.size() > 0, r.usesKvEvents(), type + " on " + fleet + ": usesKvEvents() says what it does");
    return index.size();
  }

  @Test
  void onlyPrefixAwareRoutersIndexEvents() {
    assertEquals(3, indexedAfterEvents("kv_cache_aware", Fleet.CONTEXT));
    assertEquals(3, indexedAfterEvents("kv_cache_aware", Fleet.GENERATION));
    assertEquals(3, indexedAfterEvents("affinity", Fleet.CONTEXT));
    assertEquals(0, indexedAfterEvents("affinity", Fleet.GENERATION), "the generation variant never matches prefixes");
    for (String type : List.of("round_robin", "load_balancing", "conversation")) {
      assertEquals(0, indexedAfterEvents(type, Fleet.CONTEXT), type);
    }
  }
}
