package dev.affinity.server.workermode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The frontend without the native library, as the router-only build ({@code -Daffinity.native.skip=true}) ships it:
 * child JVMs where JavaCPP looks for the JNI library under a platform no jar has, so the library is absent the way
 * it is from a jar built without it. A config of remote workers is served; one with embedded workers fails at start
 * with one line naming the library, not a stack trace.
 */
class RouterOnlyTest {
  /** JavaCPP finds no {@code <platform>/libjniAffinityNative.so} in the jar: the router-only jar's state. */
  static final List<String> LIBRARY_ABSENT = List.of("-Dorg.bytedeco.javacpp.platform=linux-absent");
  static final Duration START = Duration.ofSeconds(60);

  @Test
  void theLibraryIsAbsentInTheseJvms() throws Exception {
    WorkerProcess p = WorkerProcess.launch("version", LIBRARY_ABSENT, List.of("--version"));
    assertEquals(0, p.awaitExit(START), p.output());
    assertTrue(p.lines().stream().anyMatch(l -> l.startsWith("native library unavailable: ")
        && l.contains("no jniAffinityNative")), p.output());
  }

  @Test
  void embeddedWorkersFailAtStartWithOneLineNamingTheMissingLibrary() throws Exception {
    WorkerProcess p = WorkerProcess.launch("serve-embedded", LIBRARY_ABSENT, List.of("serve", "--port", "0"));
    assertEquals(1, p.awaitExit(START), p.output());
    List<String> errors = p.lines().stream().filter(l -> l.startsWith("affinity serve: ")).toList();
    assertEquals(1, errors.size(), p.output());
    String line = errors.get(0);
    assertTrue(line.startsWith("affinity serve: context_servers (embedded workers, backend sim): needs Affinity's native"
        + " library, which is not available: libjniAffinityNative.so for linux-absent is not on the classpath"), line);
    assertTrue(line.contains("-Daffinity.native.skip=true"), line);
    assertFalse(p.output().contains("UnsatisfiedLinkError"), p.output());
    assertFalse(p.output().contains("\tat "), "no stack trace\n" + p.output());
  }

  @Test
  void aWorkerProcessFailsTheSameWay() throws Exception {
    WorkerProcess p = WorkerProcess.launch("worker", LIBRARY_ABSENT, List.of("worker", "--port", "0"));
    assertEquals(1, p.awaitExit(START), p.output());
    assertTrue(p.lines().stream().anyMatch(l -> l.startsWith("affinity worker: the sim executor: needs Affinity's"
        + " native library, which is not available: libjniAffinityNative.so")), p.output());
    assertFalse(p.output().contains("\tat "), "no stack trace\n" + p.output());
  }

  @Test
  void remoteWorkersAreServedWithoutTheLibrary(@TempDir Path dir) throws Exception {
    HttpClient http = HttpClient.newHttpClient();
    WorkerProcess worker = WorkerProcess.start("w0", "--model", "m");  // a worker of another machine: it has the library
    WorkerProcess frontend = null;
    try {
      worker.awaitReady(http, START);
      Path config = dir.resolve("remote.yaml");
      Files.writeString(config, """
          hostname: 127.0.0.1
          port: 8000
          context_servers:
            num_instances: 1
            urls: ["%s"]
          generation_servers:
            num_instances: 1
            urls: ["%s"]
          affinity: {model: m}
          """.formatted(worker.id(), worker.id()));
      frontend = WorkerProcess.launch("router", LIBRARY_ABSENT,
          List.of("serve", "--config", config.toString(), "--host", "127.0.0.1", "--port", "0"));
      frontend.awaitReady(http, START);
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(frontend.url() + "/v1/chat/completions"))
          .header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(
              "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"Hello\"}], \"max_tokens\": 4}"))
          .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
      assertEquals(200, r.statusCode(), r.body() + "\n" + frontend.output());
      assertTrue(r.body().contains("\"chat.completion\"") && r.body().contains("\"choices\""), r.body());
    } finally {
      WorkerProcess.closeAll(frontend, List.of(worker));
    }
  }
}
