package dev.affinity.server.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code scripts/affinity} started several times at once on a stale tree builds once: the others wait
 * for that build and then run. The real launcher runs in a scratch tree whose {@code mvn} and
 * {@code java} are recorders (a slow build that writes the jar; a run that writes its arguments), and
 * whose {@code scripts/lib/setup.sh} installs nothing.
 */
class LauncherBuildLockTest {
  @TempDir
  Path root;

  @Test
  void fourLaunchersOnAStaleTreeBuildOnce() throws Exception {
    Path scripts = root.resolve("scripts");
    Files.createDirectories(scripts.resolve("lib"));
    Files.copy(Path.of("../../scripts/affinity"), scripts.resolve("affinity"));
    executable(scripts.resolve("affinity"));
    Files.writeString(scripts.resolve("lib/setup.sh"), "affinity_ensure_tools() { :; }\nAFFINITY_JVM_FLAGS=()\n");
    Files.createDirectories(root.resolve("java/affinity-server/src"));
    Files.writeString(root.resolve("java/affinity-server/src/Source.java"), "class Source {}\n");
    Files.createDirectories(root.resolve("native"));
    Files.writeString(root.resolve("pom.xml"), "<project/>\n");
    Files.writeString(root.resolve("CMakeLists.txt"), "\n");
    Path bin = Files.createDirectories(root.resolve("bin"));
    Path builds = root.resolve("builds.log");
    Path runs = root.resolve("runs.log");
    script(bin.resolve("mvn"), "echo build >> '" + builds + "'\nsleep 2\n"
        + "mkdir -p '" + root + "/java/affinity-server/target'\ntouch '" + root + "/java/affinity-server/target/affinity-server.jar'\n");
    script(bin.resolve("java"), "echo \"$*\" >> '" + runs + "'\n");

    List<Process> launchers = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      ProcessBuilder pb = new ProcessBuilder(scripts.resolve("affinity").toString(), "--version").redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.DISCARD);
      pb.environment().put("PATH", bin + ":" + System.getenv("PATH"));
      launchers.add(pb.start());
    }
    for (Process p : launchers) {
      // A bound for a broken build, not a timing assertion.
      assertEquals(true, p.waitFor(60, TimeUnit.SECONDS), "launcher ended");
      assertEquals(0, p.exitValue());
    }
    assertEquals(1, Files.readAllLines(builds).size(), "one build");
    assertEquals(4, Files.readAllLines(runs).size(), "four runs");
  }

  private static void script(Path p, String body) throws IOException {
    Files.writeString(p, "#!/usr/bin/env bash\n" + body, StandardCharsets.UTF_8);
    executable(p);
  }

  private static void executable(Path p) throws IOException {
    Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
  }
}
