package dev.affinity.server.workermode;

import static dev.affinity.server.workermode.SharedKvCluster.BOUND;
import static dev.affinity.server.workermode.SharedKvCluster.matched;
import static dev.affinity.server.workermode.SharedKvCluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.shared.NatsProcess;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The frontend that drains every worker is an {@code affinity serve} process, killed with SIGKILL: it releases nothing,
 * so the two other frontends wait for its drain leases to run out, one of them takes each worker over, and the events a
 * worker buffered while nobody drained it (a request served through a surviving frontend in that window) reach every
 * surviving frontend's index. Real nats-server, worker processes, one frontend process and two in-process frontends.
 */
class SharedKvOwnerKilledTest {
  private final SharedKvCluster cluster = new SharedKvCluster();
  private WorkerProcess owner;

  @TempDir
  Path dir;

  @AfterEach
  void stop() throws Exception {
    try {
      if (owner != null) {
        owner.kill();
      }
    } finally {
      cluster.close();
    }
  }

  @Test
  void theOthersTakeOverTheDrainsOfAFrontendKilledWithSigkill() throws Exception {
    cluster.nats = NatsProcess.start();
    cluster.startWorkers();
    Path config = dir.resolve("frontend.yaml");
    Files.writeString(config, cluster.yaml(cluster.sharedState()), StandardCharsets.UTF_8);
    owner = WorkerProcess.frontend("frontend-process", config);
    owner.awaitReady(cluster.http, SharedKvCluster.START);
    WorkerProcess.await(() -> ownedByProcess() == cluster.processes.size(), "the frontend process drains every worker",
        BOUND);

    cluster.startFrontends(2);
    List<AffinityServer> rest = List.copyOf(cluster.frontends);
    int[] before = prompt(21);
    String ctx = cluster.sendAndAwaitEverywhere(rest.get(0), rest, before); // drained by the process, shared to all
    for (AffinityServer f : rest) {
      assertEquals(0, f.sharedKvEvents().drainsOwned(), "the process holds every drain");
    }

    owner.kill();
    owner = null;
    // In the window nobody drains: the worker keeps its events until a new owner takes them.
    int[] during = prompt(22);
    HttpResponse<String> r = cluster.complete(rest.get(1), during);
    assertEquals(200, r.statusCode(), r.body());
    String servedDuring = WorkerProcessEndToEndTest.route(r, "ctx");
    for (WorkerProcess w : cluster.processes) {
      WorkerProcess.await(() -> cluster.drainers(w.id()).size() == 1, "a surviving frontend drains " + w.id(), BOUND);
    }
    cluster.awaitEverywhere(rest, servedDuring, during, BOUND);
    for (AffinityServer f : rest) {
      WorkerProcess.await(() -> matched(f, ctx, before) >= 3, "the blocks from before the kill stay known", BOUND);
    }
  }

  /** {@code affinity_shared_kv_drains_owned} of the frontend process; 0 while its /metrics does not answer. */
  private double ownedByProcess() {
    try {
      String text = cluster.http.send(HttpRequest.newBuilder(URI.create(owner.url() + "/metrics"))
          .timeout(Duration.ofSeconds(5)).GET().build(), HttpResponse.BodyHandlers.ofString()).body();
      return text.lines().filter(l -> l.startsWith("affinity_shared_kv_drains_owned "))
          .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
    } catch (java.io.IOException e) {
      return 0;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return 0;
    }
  }
}
