package dev.affinity.bench.live;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.bench.drive.IdealCache;
import dev.affinity.bench.drive.Workload;
import dev.affinity.bench.drive.WorkloadDriver;
import dev.affinity.bench.metrics.LoadSeries;
import dev.affinity.bench.metrics.RunMetrics;
import dev.affinity.bench.metrics.RunResult;
import dev.affinity.bench.metrics.Slo;
import dev.affinity.bench.trace.BlockTokens;
import dev.affinity.timer.RealScheduler;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.IntConsumer;

/**
 * Plays a workload against a running frontend in wall-clock time, with the same driver, prompts and
 * metrics as the simulator, so that a live run and a simulated run of the same workload and seed can
 * be put side by side. Queue waits and load over time are not visible from outside (left empty).
 *
 * @param baseUrl       the frontend, e.g. {@code http://127.0.0.1:8000}
 * @param sessionHeader the header carrying an agent's own session id
 * @param parentHeader  the header carrying a sub-agent's parent session id
 */
public record LiveRun(String baseUrl, String model, String sessionHeader, String parentHeader, Slo slo, Duration requestTimeout) {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Runs the workload to its end (or until {@code deadline} passes); {@code label} names the run's policy. */
  public RunResult run(String label, Workload workload, long seed, Duration deadline, IntConsumer progress)
      throws IOException, InterruptedException, TimeoutException {
    int kvBlock = tokensPerBlock();
    long start = System.nanoTime();
    ExecutorService threads = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "affinity-live-request");
      t.setDaemon(true);
      return t;
    });
    try (RealScheduler scheduler = new RealScheduler("affinity-live-driver")) {
      HttpTransport transport = new HttpTransport(baseUrl, model, new BlockTokens(32000, seed), sessionHeader, parentHeader,
          threads, () -> (System.nanoTime() - start) / 1000, requestTimeout);
      Object done = new Object();
      WorkloadDriver[] holder = new WorkloadDriver[1];
      WorkloadDriver driver = new WorkloadDriver(transport, scheduler, new IdealCache(kvBlock), rec -> {
        progress.accept(holder[0].completed());
        synchronized (done) {
          done.notifyAll();
        }
      });
      holder[0] = driver;
      workload.start(driver);
      long end = System.nanoTime() + deadline.toNanos();
      synchronized (done) {
        while (!driver.finished()) {
          long left = end - System.nanoTime();
          if (left <= 0) {
            throw new TimeoutException(workload.name() + ": " + driver.completed() + " of " + driver.planned()
                + " requests answered within " + deadline.toSeconds() + " s");
          }
          done.wait(Math.max(1, Math.min(1000, left / 1_000_000)));
        }
      }
      var records = driver.records();
      RunMetrics metrics = RunMetrics.of(records, LoadSeries.empty(), null, null, slo);
      double wall = (System.nanoTime() - start) / 1e9;
      return new RunResult(label, workload.name(), seed, metrics, records, LoadSeries.empty(), wall, 0);
    } finally {
      threads.shutdownNow();
      threads.awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  /** The context instances' KV block size from {@code /cluster_info} (32 when it does not say). */
  private int tokensPerBlock() throws IOException, InterruptedException {
    HttpClient c = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    HttpResponse<String> r = c.send(HttpRequest.newBuilder(URI.create(baseUrl.replaceAll("/+$", "") + "/cluster_info"))
        .timeout(Duration.ofSeconds(10)).GET().build(), HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != 200) {
      throw new IOException(baseUrl + "/cluster_info answered HTTP " + r.statusCode() + ": is a frontend running there?");
    }
    JsonNode workers = JSON.readTree(r.body()).path("context_servers").path("workers");
    for (JsonNode w : workers) {
      if (w.path("tokens_per_block").asInt(0) > 0) {
        return w.path("tokens_per_block").asInt();
      }
    }
    return 32;
  }
}
