package dev.affinity.server.workermode;

import static dev.affinity.server.workermode.SharedKvCluster.BOUND;
import static dev.affinity.server.workermode.SharedKvCluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.shared.NatsProcess;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * NATS down and back while three frontends serve requests (a real nats-server killed with SIGKILL, then started again
 * on the same port and store). While it is down every frontend keeps answering and routes on the index it has; the
 * owners stop draining, so the workers keep their new events. Once it is back the frontends reconnect, exactly one
 * drains each worker again, the events the workers kept reach every index, and so do new ones. Waits are for states,
 * with generous bounds.
 */
class SharedKvOutageTest {
  /** Reconnecting and resuming the ordered consumer (after three missed 1 s heartbeats): a bound, not a timing. */
  static final Duration RESUME = Duration.ofSeconds(45);

  private final SharedKvCluster cluster = new SharedKvCluster();
  private final List<AffinityServer> frontends = cluster.frontends;

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  @Test
  void frontendsServeThroughANatsOutageAndShareAgainWhenItIsBack() throws Exception {
    cluster.nats = NatsProcess.start();
    cluster.startWorkers();
    cluster.startFrontends(3);
    cluster.awaitOneDrainerEach();
    int[] before = prompt(11);
    String ctx = cluster.sendAndAwaitEverywhere(frontends.get(0), frontends, before);

    cluster.nats.kill();
    for (AffinityServer f : frontends) {
      WorkerProcess.await(() -> !f.sharedKvEvents().connected(), "a frontend sees NATS gone", BOUND);
      assertEquals(0.0, cluster.metric(f, "affinity_shared_kv_connected"));
    }
    // The owners' lease refreshes fail: nobody drains, the workers keep their events.
    for (WorkerProcess w : cluster.processes) {
      WorkerProcess.await(() -> cluster.drainers(w.id()).isEmpty(), "nobody drains " + w.id(), BOUND);
    }

    // Degraded, not down: every frontend answers, and routes on the index it has.
    for (AffinityServer f : frontends) {
      HttpResponse<String> r = cluster.complete(f, before);
      assertEquals(200, r.statusCode(), r.body());
      assertEquals(ctx, WorkerProcessEndToEndTest.route(r, "ctx"), r.headers().toString());
      assertTrue(Integer.parseInt(WorkerProcessEndToEndTest.route(r, "reused")) >= 48, r.headers().toString());
    }
    int[] during = prompt(12);
    HttpResponse<String> r = cluster.complete(frontends.get(1), during);
    assertEquals(200, r.statusCode(), r.body());
    String duringCtx = WorkerProcessEndToEndTest.route(r, "ctx");

    cluster.nats.restart();
    for (AffinityServer f : frontends) {
      WorkerProcess.await(() -> f.sharedKvEvents().connected(), "a frontend reconnects", RESUME);
    }
    cluster.awaitOneDrainerEach();
    double owned = 0;
    for (AffinityServer f : frontends) {
      owned += cluster.metric(f, "affinity_shared_kv_drains_owned");
    }
    assertEquals(cluster.processes.size(), owned, "exactly one frontend drains each worker again");

    // What the workers kept while nobody drained them reaches every index, and new blocks do too.
    cluster.awaitEverywhere(frontends, duringCtx, during, RESUME);
    HttpResponse<String> after = cluster.complete(frontends.get(2), prompt(13));
    assertEquals(200, after.statusCode(), after.body());
    cluster.awaitEverywhere(frontends, WorkerProcessEndToEndTest.route(after, "ctx"), prompt(13), RESUME);
  }
}
