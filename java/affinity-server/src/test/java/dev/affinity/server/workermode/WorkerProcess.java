package dev.affinity.server.workermode;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code affinity worker} (or, {@link #frontend}, {@code affinity serve}) in a child JVM, started with this
 * JVM's classpath. It listens on a free port (--port 0) and prints it; {@link #awaitReady} waits for that line
 * and for {@code /health}. Output is kept (the last lines) for failure messages. {@link #kill()} is SIGKILL.
 */
final class WorkerProcess implements AutoCloseable {
  private static final Pattern LISTENING = Pattern.compile("listening on http://[^:]+:(\\d+)");
  private static final int KEPT_LINES = 200;

  private final String name;
  private final Process process;
  private final CompletableFuture<Integer> port = new CompletableFuture<>();
  private final Deque<String> output = new ArrayDeque<>();

  private final Thread reader;

  private WorkerProcess(String name, Process process) {
    this.name = name;
    this.process = process;
    reader = new Thread(this::readOutput, "worker-process-" + name);
    reader.setDaemon(true);
    reader.start();
  }

  /** Starts {@code affinity worker --host 127.0.0.1 --port 0 --name NAME} plus {@code args}. */
  static WorkerProcess start(String name, String... args) throws IOException {
    List<String> all = new ArrayList<>(List.of("worker", "--host", "127.0.0.1", "--port", "0", "--name", name));
    all.addAll(List.of(args));
    return launch(name, all);
  }

  /** Starts {@code affinity worker --host 127.0.0.1 --port PORT --name NAME} plus {@code args} (a restart on its old port). */
  static WorkerProcess startOnPort(String name, int port, String... args) throws IOException {
    List<String> all = new ArrayList<>(List.of("worker", "--host", "127.0.0.1", "--port", Integer.toString(port), "--name",
        name));
    all.addAll(List.of(args));
    return launch(name, all);
  }

  /** Starts a frontend: {@code affinity serve --config FILE --host 127.0.0.1 --port 0}. */
  static WorkerProcess frontend(String name, Path config) throws IOException {
    return launch(name, List.of("serve", "--config", config.toString(), "--host", "127.0.0.1", "--port", "0"));
  }

  private static WorkerProcess launch(String name, List<String> cliArgs) throws IOException {
    return launch(name, List.of(), cliArgs);
  }

  /** Any {@code affinity} command line in a child JVM with these extra JVM options. */
  static WorkerProcess launch(String name, List<String> jvmArgs, List<String> cliArgs) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("--enable-native-access=ALL-UNNAMED");
    cmd.add("-Dorg.bytedeco.javacpp.maxPhysicalBytes=0");
    cmd.add("-Dorg.bytedeco.javacpp.maxBytes=0");
    cmd.add("-XX:TieredStopAtLevel=1"); // quick start; these workers live for seconds
    cmd.addAll(jvmArgs);
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add("dev.affinity.server.cli.AffinityCli");
    cmd.addAll(cliArgs);
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    return new WorkerProcess(name, p);
  }

  private void readOutput() {
    try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
      for (String line = r.readLine(); line != null; line = r.readLine()) {
        synchronized (output) {
          output.addLast(line);
          if (output.size() > KEPT_LINES) {
            output.removeFirst();
          }
        }
        Matcher m = LISTENING.matcher(line);
        if (!port.isDone() && m.find()) {
          port.complete(Integer.parseInt(m.group(1)));
        }
      }
    } catch (IOException e) {
      // the process went away
    }
    port.completeExceptionally(new IllegalStateException("worker " + name + " exited before listening"));
  }

  /** Waits for the port line and a 200 from {@code /health}; fails with the process output. */
  void awaitReady(HttpClient http, Duration within) throws Exception {
    long deadline = System.nanoTime() + within.toNanos();
    try {
      port.get(within.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException | java.util.concurrent.ExecutionException e) {
      throw new AssertionError("worker " + name + " did not start: " + e + "\n" + output(), e);
    }
    while (true) {
      try {
        HttpResponse<Void> r = http.send(HttpRequest.newBuilder(URI.create(url() + "/health"))
            .timeout(Duration.ofSeconds(2)).GET().build(), HttpResponse.BodyHandlers.discarding());
        if (r.statusCode() == 200) {
          return;
        }
      } catch (IOException e) {
        // not yet
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError("worker " + name + " never became healthy\n" + output());
      }
      Thread.sleep(50);
    }
  }

  int port() {
    return port.join();
  }

  /** Waits for the process to exit on its own and returns its exit code, with all of its output read. */
  int awaitExit(Duration within) throws InterruptedException {
    if (!process.waitFor(within.toMillis(), TimeUnit.MILLISECONDS)) {
      throw new AssertionError(name + " did not exit within " + within + "\n" + output());
    }
    reader.join(within.toMillis());
    return process.exitValue();
  }

  /** The output's last lines (up to 200). */
  List<String> lines() {
    synchronized (output) {
      return List.copyOf(output);
    }
  }

  String url() {
    return "http://127.0.0.1:" + port();
  }

  /** {@code host:port}, the id a frontend gives this worker. */
  String id() {
    return "127.0.0.1:" + port();
  }

  String name() {
    return name;
  }

  boolean isAlive() {
    return process.isAlive();
  }

  /** SIGKILL, then waits for the process to be gone. */
  void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(10, TimeUnit.SECONDS);
  }

  /** The sum of a per-rank gauge on this worker's {@code /metrics}. */
  double metric(HttpClient http, String name) throws IOException, InterruptedException {
    String text = http.send(HttpRequest.newBuilder(URI.create(url() + "/metrics")).GET().build(),
        HttpResponse.BodyHandlers.ofString()).body();
    return text.lines().filter(l -> l.startsWith(name + "{"))
        .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
  }

  /**
   * Waits for a state the system reaches on its own; {@code bound} only stops a broken build (not a timing
   * assertion).
   */
  static void await(BooleanSupplier condition, String what, Duration bound) throws InterruptedException {
    long deadline = System.nanoTime() + bound.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError("timed out waiting: " + what);
      }
      Thread.sleep(25);
    }
  }

  String output() {
    synchronized (output) {
      return "---- " + name + " output ----\n" + String.join("\n", output);
    }
  }

  @Override
  public void close() throws InterruptedException {
    if (process.isAlive()) {
      kill();
    }
  }

  /** Stops a test's frontend (if it started) and then every worker process it launched, whatever fails. */
  static void closeAll(AutoCloseable frontend, List<WorkerProcess> processes) throws Exception {
    try {
      if (frontend != null) {
        frontend.close();
      }
    } finally {
      for (WorkerProcess p : processes) {
        p.close();
      }
    }
  }
}
