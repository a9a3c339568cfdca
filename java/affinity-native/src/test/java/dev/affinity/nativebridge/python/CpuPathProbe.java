package dev.affinity.nativebridge.python;

import dev.affinity.executor.ExecutorRequest;
import dev.affinity.executor.ExecutorResponse;
import dev.affinity.nativebridge.NativeExecutor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * Run in a child JVM by {@link CpuPathWithoutPythonTest}: serves one request on the CPU executor and
 * prints every mapped file whose name contains "python" (none expected).
 */
public final class CpuPathProbe {
  private CpuPathProbe() {}

  public static void main(String[] args) throws Exception {
    try (NativeExecutor ex = NativeExecutor.create("sim", "{}")) {
      long id = ex.enqueue(ExecutorRequest.builder(new int[] {1, 2, 3}, 2).build());
      boolean done = false;
      while (!done) {
        List<ExecutorResponse> rs = ex.awaitResponses(10, Duration.ofSeconds(5));
        done = rs.stream().anyMatch(r -> r.requestId() == id && r.isFinal());
      }
    }
    System.out.println("served");
    Files.readAllLines(Path.of("/proc/self/maps")).stream().filter(l -> l.contains("python") || l.contains("pyhost"))
        .map(l -> "mapped " + l.substring(l.lastIndexOf(' ') + 1)).distinct().forEach(System.out::println);
  }
}
