package dev.affinity.server.workermode;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.shared.NatsProcess;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A context worker killed (SIGKILL) and restarted on its address starts empty in every frontend's index (issue 44
 * item 3): its new cache's events (ids starting over, a new "created") reach every frontend through the shared
 * stream, and none keeps routing to blocks the dead process held. Real nats-server and worker processes; waits are
 * for states.
 */
class SharedKvRestartTest {
  final SharedKvCluster cluster = new SharedKvCluster();

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  @Test
  void aRestartedWorkersStaleBlocksLeaveEveryFrontendsIndex() throws Exception {
    cluster.nats = NatsProcess.start();
    cluster.startWorkers();
    cluster.startFrontends(3);
    List<AffinityServer> all = List.copyOf(cluster.frontends);
    int[] ids = SharedKvCluster.prompt(7);
    String ctx = cluster.sendAndAwaitEverywhere(all.get(0), all, ids);
    int index = 0;
    while (!cluster.processes.get(index).id().equals(ctx)) {
      index++;
    }
    WorkerProcess old = cluster.processes.get(index);
    int port = old.port();
    old.kill();
    WorkerProcess restarted = WorkerProcess.startOnPort(old.name(), port, "--executor-json", SharedKvCluster.EXECUTOR,
        "--model", "m", "--auth-key", SharedKvCluster.KEY);
    cluster.processes.set(index, restarted);
    restarted.awaitReady(cluster.http, SharedKvCluster.START);
    for (AffinityServer f : all) {
      WorkerProcess.await(() -> SharedKvCluster.matched(f, ctx, ids) == 0,
          "frontend " + all.indexOf(f) + " to forget the dead process's blocks on " + ctx, SharedKvCluster.BOUND);
    }
    // and the restarted worker is served and its new blocks reach every frontend (through whichever worker the
    // prompt lands on now that nobody holds it)
    cluster.sendAndAwaitEverywhere(all.get(1), all, ids);
    assertEquals(1, cluster.drainers(ctx).size(), "the restarted worker is drained by one frontend");
  }
}
