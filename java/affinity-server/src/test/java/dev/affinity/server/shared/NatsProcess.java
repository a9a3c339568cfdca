package dev.affinity.server.shared;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A real NATS server with JetStream for the tests (Debian's {@code nats-server}, which scripts/test installs;
 * {@code $NATS_BIN} points at another binary): {@code nats-server -js -a 127.0.0.1 -p PORT -sd DIR} on a free port,
 * optionally with {@code --auth TOKEN}, waited for on its monitoring port ({@code /healthz}, which answers 200 once
 * JetStream is ready). {@link #kill()} and {@link #restart()} (the same port and store directory) for the outage
 * tests; {@link #close()} kills it and removes the store. No mock stands in for NATS.
 */
public final class NatsProcess implements AutoCloseable {
  private final Path dir;
  private final int port;
  private final int monitorPort;
  private final String token;
  private Process process;

  private NatsProcess(Path dir, int port, int monitorPort, String token) {
    this.dir = dir;
    this.port = port;
    this.monitorPort = monitorPort;
    this.token = token;
  }

  /** The nats-server binary: $NATS_BIN, else {@code nats-server} on the PATH, else /usr/sbin/nats-server. */
  static String binary() {
    String env = System.getenv("NATS_BIN");
    if (env != null && !env.isBlank()) {
      return env;
    }
    List<String> dirs = new ArrayList<>(List.of(System.getenv().getOrDefault("PATH", "/usr/bin")
        .split(java.io.File.pathSeparator)));
    dirs.add("/usr/sbin");
    for (String d : dirs) {
      if (Files.isExecutable(Path.of(d, "nats-server"))) {
        return Path.of(d, "nats-server").toString();
      }
    }
    throw new AssertionError("nats-server is not installed: the shared KV events tests start a real NATS server. "
        + "Install it with `apt-get install nats-server` (scripts/test does), or point NATS_BIN at the binary");
  }

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  /** A server without authentication. */
  public static NatsProcess start() throws Exception {
    return start(null);
  }

  /** A server that accepts only clients presenting {@code token} (null: no authentication). */
  public static NatsProcess start(String token) throws Exception {
    NatsProcess nats = new NatsProcess(Files.createTempDirectory("affinity-nats"), freePort(), freePort(), token);
    try {
      nats.launch();
    } catch (Exception | Error e) {
      nats.close();
      throw e;
    }
    return nats;
  }

  private void launch() throws Exception {
    List<String> cmd = new ArrayList<>(List.of(binary(), "-js", "-a", "127.0.0.1", "-p", String.valueOf(port),
        "-m", String.valueOf(monitorPort), "-sd", dir.resolve("store").toString()));
    if (token != null) {
      cmd.addAll(List.of("--auth", token));
    }
    process = new ProcessBuilder(cmd).redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("nats.log").toFile())).start();
    awaitHealthy(Duration.ofSeconds(30));
  }

  private void awaitHealthy(Duration within) throws InterruptedException {
    HttpClient http = HttpClient.newHttpClient();
    long deadline = System.nanoTime() + within.toNanos();
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new AssertionError("nats-server exited with " + process.exitValue() + ":\n" + log());
      }
      try {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + monitorPort
            + "/healthz")).timeout(Duration.ofSeconds(2)).GET().build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() == 200) {
          return;
        }
      } catch (IOException e) {
        // not yet
      }
      Thread.sleep(50);
    }
    throw new AssertionError("nats-server did not become healthy within " + within + ":\n" + log());
  }

  /** {@code nats://127.0.0.1:PORT}. */
  public String url() {
    return "nats://127.0.0.1:" + port;
  }

  public int port() {
    return port;
  }

  /** Kills the server (SIGKILL); its store stays for {@link #restart()}. */
  public void kill() throws InterruptedException {
    if (process != null) {
      process.destroyForcibly();
      process.waitFor(10, TimeUnit.SECONDS);
    }
  }

  /** Starts the server again on the same port with the same store (after {@link #kill()}). */
  public void restart() throws Exception {
    kill();
    launch();
  }

  public boolean isAlive() {
    return process != null && process.isAlive();
  }

  String log() {
    try {
      return Files.readString(dir.resolve("nats.log"));
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }

  @Override
  public void close() throws Exception {
    kill();
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path f : files.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(f);
      }
    }
  }
}
