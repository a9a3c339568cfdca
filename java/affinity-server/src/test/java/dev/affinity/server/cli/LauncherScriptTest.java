package dev.affinity.server.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real {@code scripts/affinity} in a scratch tree whose {@code mvn} and {@code java} are recorders (a slow build
 * that writes the jar; a run that writes its arguments), with the real {@code scripts/lib/setup.sh} except that it
 * installs nothing: several launchers started at once on a stale tree build once (the others wait for that build and
 * then run), and the JVM gets the parallel collector unless the options choose one.
 */
class LauncherScriptTest {
  @TempDir
  Path root;
  private Path launcher;
  private Path bin;
  private Path builds;
  private Path runs;

  @BeforeEach
  void scratchTree() throws IOException {
    Path scripts = root.resolve("scripts");
    Files.createDirectories(scripts.resolve("lib"));
    launcher = scripts.resolve("affinity");
    Files.copy(Path.of("../../scripts/affinity"), launcher);
    executable(launcher);
    Files.writeString(scripts.resolve("lib/setup.sh"), Files.readString(Path.of("../../scripts/lib/setup.sh"))
        + "\naffinity_ensure_tools() { :; }\nAFFINITY_JVM_FLAGS=()\n");
    Files.createDirectories(root.resolve("java/affinity-server/src"));
    Files.writeString(root.resolve("java/affinity-server/src/Source.java"), "class Source {}\n");
    Files.createDirectories(root.resolve("native"));
    Files.writeString(root.resolve("pom.xml"), "<project/>\n");
    Files.writeString(root.resolve("CMakeLists.txt"), "\n");
    bin = Files.createDirectories(root.resolve("bin"));
    builds = root.resolve("builds.log");
    runs = root.resolve("runs.log");
    script(bin.resolve("mvn"), "echo build >> '" + builds + "'\nsleep 2\n"
        + "mkdir -p '" + root + "/java/affinity-server/target'\ntouch '" + root + "/java/affinity-server/target/affinity-server.jar'\n");
    script(bin.resolve("java"), "echo \"$*\" >> '" + runs + "'\n");
  }

  @Test
  void fourLaunchersOnAStaleTreeBuildOnce() throws Exception {
    List<Process> launchers = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      launchers.add(start(Map.of()));
    }
    for (Process p : launchers) {
      assertExits(p);
    }
    assertEquals(1, Files.readAllLines(builds).size(), "one build");
    assertEquals(4, Files.readAllLines(runs).size(), "four runs");
  }

  @Test
  void theParallelCollectorUnlessTheOptionsChooseOne() throws Exception {
    Path jar = Files.createDirectories(root.resolve("java/affinity-server/target")).resolve("affinity-server.jar");
    Files.writeString(jar, "");
    Files.setLastModifiedTime(jar, FileTime.from(Instant.now().plusSeconds(3600)));  // fresh: no build

    assertExits(start(Map.of()));
    assertExits(start(Map.of("AFFINITY_JAVA_OPTS", "-Xmx1g -XX:+UseG1GC")));
    assertExits(start(Map.of("JAVA_TOOL_OPTIONS", "-XX:+UseSerialGC")));
    assertExits(start(Map.of("AFFINITY_JAVA_OPTS", "-XX:+UseStringDeduplication -Xlog:gc")));

    List<String> lines = Files.readAllLines(runs);
    assertEquals(4, lines.size());
    assertTrue(lines.get(0).startsWith("-XX:+UseParallelGC "), lines.get(0));
    assertTrue(lines.get(1).startsWith("-Xmx1g -XX:+UseG1GC "), lines.get(1));
    assertFalse(lines.get(1).contains("UseParallelGC"), lines.get(1));
    assertFalse(lines.get(2).contains("UseParallelGC"), lines.get(2));  // the JVM reads JAVA_TOOL_OPTIONS itself
    assertTrue(lines.get(3).startsWith("-XX:+UseStringDeduplication -Xlog:gc -XX:+UseParallelGC "), lines.get(3));
    assertFalse(Files.exists(builds), "no build on a fresh tree");
  }

  private Process start(Map<String, String> env) throws IOException {
    ProcessBuilder pb = new ProcessBuilder(launcher.toString(), "--version").redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.DISCARD);
    pb.environment().remove("AFFINITY_JAVA_OPTS");
    pb.environment().remove("JDK_JAVA_OPTIONS");
    pb.environment().remove("JAVA_TOOL_OPTIONS");
    pb.environment().putAll(env);
    pb.environment().put("PATH", bin + ":" + System.getenv("PATH"));
    return pb.start();
  }

  private static void assertExits(Process p) throws InterruptedException {
    // A bound for a broken build, not a timing assertion.
    assertEquals(true, p.waitFor(60, TimeUnit.SECONDS), "launcher ended");
    assertEquals(0, p.exitValue());
  }

  private static void script(Path p, String body) throws IOException {
    Files.writeString(p, "#!/usr/bin/env bash\n" + body, StandardCharsets.UTF_8);
    executable(p);
  }

  private static void executable(Path p) throws IOException {
    Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
  }
}
