package dev.affinity.server.fleet;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.mockito.ArgumentMatchers.any;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.never;
import static org.mockito.Mockito.verify;
import static org.mockito.Mockito.when;

import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.disagg.RequestIds;
import dev.affinity.routing.Fleet;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerInfo;
import org.junit.jupiter.api.Test;

/**
 * A worker joins its fleet's router, and its KV events are taken only where that router reads them: a prefix-aware
 * context router drains them, a load-balancing generation router leaves them in the worker's bounded buffer.
 */
class OrchestrationTest {
  @Test
  void onlyARouterThatReadsKvEventsTakesAWorkersEvents() {
    DisaggConfig config = ConfigLoader.parse("""
        context_servers: {num_instances: 1, urls: ["c0:8001"], router: {type: kv_cache_aware}}
        generation_servers: {num_instances: 1, urls: ["g0:8002"], router: {type: load_balancing}}
        """, "orchestration.yaml").config();
    Orchestration o = Orchestration.build(config, (task, delay) -> () -> { }, System::nanoTime,
        new RequestIds(0, 0, System::currentTimeMillis));
    assertTrue(o.router(Fleet.CONTEXT).usesKvEvents());
    assertFalse(o.router(Fleet.GENERATION).usesKvEvents());
    Worker ctx = worker("c0:8001");
    Worker gen = worker("g0:8002");
    o.attach(ctx, Fleet.CONTEXT);
    o.attach(gen, Fleet.GENERATION);
    verify(ctx).onKvEvents(any());
    verify(gen, never()).onKvEvents(any());
    assertTrue(o.router(Fleet.GENERATION).workers().contains(gen), "the worker still joins its router");
  }

  private static Worker worker(String id) {
    Worker w = mock(Worker.class);
    when(w.id()).thenReturn(id);
    when(w.isAlive()).thenReturn(true);
    when(w.info()).thenReturn(WorkerInfo.defaults());
    return w;
  }
}
