package dev.affinity.nativebridge.python;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A Python interpreter as the pytorch backend embeds it: its real executable (a venv's
 * {@code bin/python}, never a version-manager shim, so that the embedded interpreter finds its
 * prefix and site-packages), its {@code major.minor} version and its shared libpython. Found by asking
 * the interpreter itself once (about 40 ms).
 *
 * @param executable {@code sys.executable} of the interpreter
 * @param version {@code major.minor}
 * @param libpython the shared library to load ({@code INSTSONAME}, e.g. libpython3.12.so.1.0)
 */
public record PythonEnvironment(String executable, String version, String libpython) {
  /** Environment variable naming the interpreter when the configuration does not. */
  public static final String PYTHON_ENV = "AFFINITY_PYTHON";

  private static final String PROBE = String.join("\n",
      "import os, sys, sysconfig",
      "v = sysconfig.get_config_var",
      "print(sys.executable)",
      "print('%d.%d' % sys.version_info[:2])",
      "name = v('INSTSONAME') or ''",
      "print(name)",
      "for d in (v('LIBDIR'), os.path.join(v('LIBDIR') or '', v('MULTIARCH') or ''), v('LIBPL'), os.path.join(sys.base_prefix, 'lib')):",
      "    print(d or '')");

  /** The interpreter a configuration names, else {@code $AFFINITY_PYTHON}, else {@code python3}. */
  public static String defaultInterpreter(String configured) {
    if (configured != null && !configured.isBlank()) {
      return configured;
    }
    String env = System.getenv(PYTHON_ENV);
    return env != null && !env.isBlank() ? env : "python3";
  }

  /**
   * Asks {@code python} for its executable, version and libpython. Throws IllegalArgumentException
   * naming the interpreter when it cannot run or has no shared libpython.
   */
  public static PythonEnvironment probe(String python) {
    List<String> lines = new ArrayList<>();
    String err;
    int rc;
    Path errFile = null;
    try {
      errFile = Files.createTempFile("affinity-python-probe", ".err");
      Process p = new ProcessBuilder(python, "-I", "-c", PROBE).redirectError(errFile.toFile()).start();
      p.getOutputStream().close();
      CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> {
        try (InputStream in = p.getInputStream()) {
          return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      });
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalArgumentException("python interpreter " + python + " did not answer within 30 s");
      }
      out.get(5, TimeUnit.SECONDS).lines().forEach(lines::add);
      rc = p.exitValue();
      err = Files.readString(errFile).strip();
    } catch (IOException | ExecutionException | TimeoutException e) {
      throw new IllegalArgumentException("cannot run the python interpreter \"" + python + "\" (set 'python' in the "
          + "executor configuration or $" + PYTHON_ENV + "): " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalArgumentException("interrupted while asking " + python + " for its libpython", e);
    } finally {
      if (errFile != null) {
        try {
          Files.deleteIfExists(errFile);
        } catch (IOException ignored) {
          // a temporary file left behind
        }
      }
    }
    if (rc != 0 || lines.size() < 3) {
      throw new IllegalArgumentException("python interpreter " + python + " failed (exit " + rc + "): " + err);
    }
    String executable = lines.get(0);
    String version = lines.get(1);
    String soname = lines.get(2);
    if (soname.isEmpty()) {
      throw new IllegalArgumentException("python " + version + " at " + executable + " has no shared libpython "
          + "(built without --enable-shared), so it cannot be embedded; use a Python built with --enable-shared "
          + "(distribution packages and the TensorRT-LLM containers are)");
    }
    for (String dir : lines.subList(3, lines.size())) {
      if (!dir.isEmpty() && Files.isRegularFile(Path.of(dir, soname))) {
        return new PythonEnvironment(executable, version, Path.of(dir, soname).toString());
      }
    }
    return new PythonEnvironment(executable, version, soname); // the dynamic loader's search path
  }
}
