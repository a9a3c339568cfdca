package dev.affinity.nativebridge.python;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Always on: the CPU path loads the native library and serves a request without ever mapping
 * libpython or the Python host library (checked in a fresh JVM, since tests of the pytorch backend
 * start an interpreter in this one).
 */
class CpuPathWithoutPythonTest {
  @Test
  void theSimBackendServesWithoutLoadingPython() throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
    cmd.add("--enable-native-access=ALL-UNNAMED");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(CpuPathProbe.class.getName());
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS));
    assertEquals(0, p.exitValue(), out);
    assertTrue(out.contains("served"), out);
    assertTrue(out.lines().noneMatch(l -> l.startsWith("mapped ")), out);
  }
}
