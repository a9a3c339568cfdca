package dev.affinity.server.cluster;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A real etcd for the tests (Debian's {@code etcd-server}, which scripts/test installs): one member on free
 * loopback ports with a data directory of its own, started and waited for ({@code /health}), killed and
 * removed by {@link #close()}. No mock stands in for etcd.
 */
public final class EtcdProcess implements AutoCloseable {
  private final Process process;
  private final Path dataDir;
  private final Path log;
  private final int clientPort;

  private EtcdProcess(Process process, Path dataDir, Path log, int clientPort) {
    this.process = process;
    this.dataDir = dataDir;
    this.log = log;
    this.clientPort = clientPort;
  }

  /** The etcd binary: $ETCD_BIN, else {@code etcd} on the PATH (or /usr/bin/etcd). */
  static String binary() {
    String env = System.getenv("ETCD_BIN");
    if (env != null && !env.isBlank()) {
      return env;
    }
    for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin").split(java.io.File.pathSeparator)) {
      if (Files.isExecutable(Path.of(dir, "etcd"))) {
        return Path.of(dir, "etcd").toString();
      }
    }
    throw new AssertionError("etcd is not installed: the etcd tests start a real etcd. Install it with "
        + "`apt-get install etcd-server` (scripts/test does), or point ETCD_BIN at the binary");
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  public static EtcdProcess start() throws Exception {
    Path dir = Files.createTempDirectory("affinity-etcd");
    int client = freePort();
    int peer = freePort();
    Path log = dir.resolve("etcd.log");
    Process p = new ProcessBuilder(binary(), "--name", "affinity-test", "--data-dir", dir.resolve("data").toString(),
        "--listen-client-urls", "http://127.0.0.1:" + client, "--advertise-client-urls", "http://127.0.0.1:" + client,
        "--listen-peer-urls", "http://127.0.0.1:" + peer, "--initial-advertise-peer-urls", "http://127.0.0.1:" + peer,
        "--initial-cluster", "affinity-test=http://127.0.0.1:" + peer, "--log-level", "warn")
        .redirectErrorStream(true).redirectOutput(log.toFile()).start();
    EtcdProcess etcd = new EtcdProcess(p, dir, log, client);
    try {
      etcd.awaitHealthy(Duration.ofSeconds(30));
    } catch (RuntimeException | Error | InterruptedException e) {
      etcd.close();
      throw e;
    }
    return etcd;
  }

  private void awaitHealthy(Duration within) throws InterruptedException {
    HttpClient http = HttpClient.newHttpClient();
    long deadline = System.nanoTime() + within.toNanos();
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new AssertionError("etcd exited with " + process.exitValue() + ":\n" + log());
      }
      try {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + clientPort + "/health"))
            .timeout(Duration.ofSeconds(2)).GET().build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() == 200 && r.body().contains("true")) {
          return;
        }
      } catch (IOException e) {
        // not yet
      }
      Thread.sleep(50);
    }
    throw new AssertionError("etcd did not become healthy within " + within + ":\n" + log());
  }

  /** {@code 127.0.0.1:port} of the client endpoint. */
  public String endpoint() {
    return "127.0.0.1:" + clientPort;
  }

  /** {@code etcd://127.0.0.1:port}, a {@code cluster_uri}. */
  public String uri() {
    return "etcd://" + endpoint();
  }

  String log() {
    try {
      return Files.readString(log);
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }

  @Override
  public void close() throws Exception {
    process.destroyForcibly();
    process.waitFor(10, TimeUnit.SECONDS);
    try (Stream<Path> files = Files.walk(dataDir)) {
      for (Path f : files.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(f);
      }
    }
  }
}
