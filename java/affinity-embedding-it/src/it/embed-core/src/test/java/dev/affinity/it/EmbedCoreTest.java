package dev.affinity.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.kv.HashAlgorithm;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Outcome;
import dev.affinity.routing.Router;
import dev.affinity.routing.RouterContext;
import dev.affinity.routing.RouterFactory;
import dev.affinity.routing.RoutingRequest;
import dev.affinity.routing.Selection;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerCall;
import dev.affinity.worker.WorkerInfo;
import dev.affinity.worker.WorkerListener;
import dev.affinity.worker.WorkerRequest;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Routing only, as docs/embedding.md shows it: a config's router over the service's own workers. */
class EmbedCoreTest {
  /** The service's own worker: routers need its id and shape, never its transport. */
  record OwnWorker(String id) implements Worker {
    @Override
    public WorkerInfo info() {
      return new WorkerInfo(32, HashAlgorithm.V1_BLOCK_KEY, 2, true, 64);
    }

    @Override
    public boolean isAlive() {
      return true;
    }

    @Override
    public WorkerCall send(WorkerRequest request, WorkerListener listener) {
      throw new UnsupportedOperationException("the service sends requests itself");
    }
  }

  @Test
  void aConversationStaysOnItsWorker() throws Exception {
    DisaggConfig config = ConfigLoader.parse("""
        hostname: localhost
        port: 8000
        context_servers:
          num_instances: 2
          urls: ["ctx-0:8001", "ctx-1:8001"]
          router: {type: conversation}
        generation_servers:
          num_instances: 1
          urls: ["gen-0:8002"]
        """, "service.yaml").config();
    Router router = new RouterFactory().create(config.context().router(), "context_servers",
        RouterContext.of(Fleet.CONTEXT));
    router.addWorker(new OwnWorker("ctx-0:8001"));
    router.addWorker(new OwnWorker("ctx-1:8001"));

    int[] prompt = new int[256];
    for (int i = 0; i < prompt.length; i++) {
      prompt[i] = 1000 + i;
    }
    Selection first = router.select(RoutingRequest.builder(1, Fleet.CONTEXT).routingKey("agent-1").tokens(prompt).build(),
        Set.of());
    assertTrue(first.worker().id().startsWith("ctx-"), first.worker().id());
    assertTrue(first.release(Outcome.SUCCESS));
    Selection again = router.select(RoutingRequest.builder(2, Fleet.CONTEXT).routingKey("agent-1").tokens(prompt).build(),
        Set.of());
    assertEquals(first.worker().id(), again.worker().id(), "the conversation's second turn lands where its KV is");
    assertTrue(again.release(Outcome.SUCCESS));
    Selection elsewhere = router.select(RoutingRequest.builder(3, Fleet.CONTEXT).routingKey("agent-1").tokens(prompt)
        .build(), Set.of(first.worker().id()));
    assertNotEquals(first.worker().id(), elsewhere.worker().id(), "an excluded worker is not chosen");
    elsewhere.release(Outcome.CANCELLED);
  }

  @Test
  void coreBringsNoNetty() {
    assertThrows(ClassNotFoundException.class, () -> Class.forName("io.netty.buffer.ByteBuf"),
        "affinity-core's classpath has no Netty");
  }
}
