package dev.affinity.nativebridge;

import dev.affinity.executor.ExecutorException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The executor backends of this class path: every {@link ExecutorBackendProvider} that
 * {@link ServiceLoader} finds, by name, loaded once. The built-in ones are {@code sim} (the CPU
 * executor) and {@code pytorch} (TensorRT-LLM in an embedded CPython).
 */
public final class ExecutorBackends {
  private static final Logger log = LoggerFactory.getLogger(ExecutorBackends.class);

  private ExecutorBackends() {}

  /** Loaded on first use (the holder idiom). */
  private static final class Loaded {
    static final Map<String, ExecutorBackendProvider> BY_NAME = load();

    private static Map<String, ExecutorBackendProvider> load() {
      Map<String, ExecutorBackendProvider> out = new LinkedHashMap<>();
      for (ExecutorBackendProvider p : ServiceLoader.load(ExecutorBackendProvider.class,
          ExecutorBackendProvider.class.getClassLoader())) {
        ExecutorBackendProvider first = out.putIfAbsent(p.name(), p);
        if (first != null) {
          log.warn("executor backend \"{}\" is provided twice: {} is used, {} ignored", p.name(),
              first.getClass().getName(), p.getClass().getName());
        }
      }
      return Collections.unmodifiableMap(out);
    }
  }

  /** The provider of a backend, if one is on the class path. */
  public static Optional<ExecutorBackendProvider> find(String name) {
    return Optional.ofNullable(Loaded.BY_NAME.get(name));
  }

  /** The provider of a backend; {@link ExecutorException} naming the backends there are otherwise. */
  public static ExecutorBackendProvider get(String name) {
    return find(name).orElseThrow(() -> new ExecutorException("unknown executor backend \"" + name + "\" (available: "
        + String.join(",", names()) + ")"));
  }

  /** The names of every backend provider, in class-path order. */
  public static Set<String> names() {
    return Loaded.BY_NAME.keySet();
  }
}
