package dev.affinity.nativebridge.python;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.executor.ExecutorException;
import dev.affinity.nativebridge.peer.AffinityNative;
import java.io.File;
import java.io.IOException;
import java.net.URL;
import org.bytedeco.javacpp.Loader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Java's part of the native {@code pytorch} backend (docs/gpu.md; its plug-in is
 * {@link PyTorchBackendProvider}): before the native factory runs, it fills in what only the JVM
 * knows: the interpreter's real executable, its libpython, and the Python host library extracted
 * from this jar. It also registers one shutdown hook that stops the process's
 * Python host (every LLM first, then the interpreter), so that TensorRT-LLM's worker processes end
 * with the JVM. Nothing here loads Python unless a pytorch executor is created.
 */
public final class PyTorchBackend {
  /** The backend's name in {@code createExecutor} and in a worker pool's {@code backend:}. */
  public static final String NAME = "pytorch";
  /** The host library's resource name, next to this class in the jar. */
  static final String HOST_LIBRARY = "libaffinity_pyhost.so";
  private static final Logger log = LoggerFactory.getLogger(PyTorchBackend.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long STOP_TIMEOUT_MS = 60_000;
  /** How long the shutdown hook waits for open pytorch executors to be closed (a server drains first). */
  private static final long CLOSE_WAIT_MS = Long.getLong("affinity.python.closeWaitMs", 40_000);
  private static final Object OPEN_LOCK = new Object();
  private static int open;
  private static boolean hookRegistered;

  private PyTorchBackend() {}

  /**
   * The configuration with {@code python} resolved to the interpreter's executable and
   * {@code libpython} / {@code host_library} filled in where absent. Throws ExecutorException naming
   * the problem (no such interpreter, no shared libpython, no host library in this build).
   */
  public static String prepare(String configJson) {
    ObjectNode cfg = parse(configJson);
    JsonNode python = cfg.get("python");
    if (python != null && !python.isTextual()) {
      throw new ExecutorException("pytorch config: 'python': expected a string, found " + python);
    }
    PythonEnvironment env;
    try {
      env = PythonEnvironment.probe(PythonEnvironment.defaultInterpreter(python == null ? null : python.asText()));
    } catch (IllegalArgumentException e) {
      throw new ExecutorException("pytorch config: 'python': " + e.getMessage(), e);
    }
    cfg.put("python", env.executable());
    if (!cfg.hasNonNull("libpython")) {
      cfg.put("libpython", env.libpython());
    }
    if (!cfg.hasNonNull("host_library")) {
      cfg.put("host_library", hostLibrary());
    }
    registerShutdownHook();
    log.debug("pytorch backend: python {} at {}, libpython {}", env.version(), env.executable(), cfg.get("libpython").asText());
    return cfg.toString();
  }

  /**
   * Why the backend cannot run here with the given interpreter (null: {@code $AFFINITY_PYTHON} or
   * python3), or empty when it can: this build has a host library and the interpreter runs and has
   * a shared libpython. Does not load Python.
   */
  public static java.util.Optional<String> unavailability(String python) {
    if (PyTorchBackend.class.getResource(HOST_LIBRARY) == null) {
      return java.util.Optional.of("no Python host library in this build (built without Python development headers)");
    }
    try {
      PythonEnvironment.probe(PythonEnvironment.defaultInterpreter(python));
      return java.util.Optional.empty();
    } catch (IllegalArgumentException e) {
      return java.util.Optional.of(e.getMessage());
    }
  }

  /**
   * The configuration as {@link #prepare} would pass it, for a check of its keys only: absent
   * {@code python} / {@code libpython} / {@code host_library} are filled with placeholders, so that
   * nothing is run, extracted or loaded.
   */
  public static String prepareForCheck(String configJson) {
    ObjectNode cfg = parse(configJson);
    for (String key : new String[] {"python", "libpython", "host_library"}) {
      if (!cfg.has(key)) {
        cfg.put(key, "<resolved at start>");
      }
    }
    return cfg.toString();
  }

  /** The host library of this build, extracted from the jar (or found in target/classes). */
  public static String hostLibrary() {
    URL url = PyTorchBackend.class.getResource(HOST_LIBRARY);
    if (url == null) {
      throw new ExecutorException("this build has no Python host library (" + HOST_LIBRARY + "): it was built without "
          + "Python development headers; install them (apt-get install python3-dev) and rebuild, or build against "
          + "the interpreter that has tensorrt_llm with -Daffinity.python=/path/to/venv/bin/python (docs/gpu.md)");
    }
    try {
      File f = Loader.cacheResource(PyTorchBackend.class, HOST_LIBRARY);
      return f.getAbsolutePath();
    } catch (IOException e) {
      throw new ExecutorException("cannot extract " + HOST_LIBRARY + ": " + e.getMessage(), e);
    }
  }

  private static ObjectNode parse(String configJson) {
    try {
      JsonNode root = configJson == null || configJson.isBlank() ? JSON.createObjectNode() : JSON.readTree(configJson);
      if (!(root instanceof ObjectNode o)) {
        throw new ExecutorException("pytorch config: expected a JSON object, found " + root.getNodeType());
      }
      return o;
    } catch (JsonProcessingException e) {
      throw new ExecutorException("pytorch config: malformed JSON: " + e.getOriginalMessage(), e);
    }
  }

  /** A pytorch executor was created ({@link PyTorchBackendProvider#opened}). */
  static void opened() {
    synchronized (OPEN_LOCK) {
      open++;
    }
  }

  /** A pytorch executor was closed ({@link PyTorchBackendProvider#closed}). */
  static void closed() {
    synchronized (OPEN_LOCK) {
      open--;
      OPEN_LOCK.notifyAll();
    }
  }

  /**
   * The shutdown hook: JVM hooks run concurrently, so it first lets the owners of open executors
   * close them (a server drains its requests, then closes its workers), up to
   * {@code -Daffinity.python.closeWaitMs} (40 s), then stops the host.
   */
  private static void stopAtExit() {
    long deadline = System.nanoTime() + CLOSE_WAIT_MS * 1_000_000;
    synchronized (OPEN_LOCK) {
      while (open > 0 && System.nanoTime() < deadline) {
        try {
          OPEN_LOCK.wait(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          break;
        }
      }
      if (open > 0) {
        log.warn("{} pytorch executor(s) still open at exit: stopping the Python host under them", open);
      }
    }
    stopHost();
  }

  private static synchronized void registerShutdownHook() {
    if (hookRegistered) {
      return;
    }
    hookRegistered = true;
    Runtime.getRuntime().addShutdownHook(new Thread(PyTorchBackend::stopAtExit, "affinity-python-stop"));
  }

  /**
   * Stops the process's Python host: every LLM is shut down, then the interpreter finalizes. It starts
   * only once per process, so no pytorch executor can be created afterwards. Returns the native
   * result (0 clean, -3 never started, -2 timed out).
   */
  public static int stopHost() {
    int rc = AffinityNative.shutdownBackends(STOP_TIMEOUT_MS);
    if (rc != 0 && rc != -3) {
      log.warn("the Python host did not stop cleanly (code {})", rc);
    }
    return rc;
  }
}
