package dev.affinity.nativebridge;

import java.util.Set;

/**
 * A native executor backend as a plug-in, the way DJL registers its engines: each backend compiled
 * into the native library has a provider, listed in
 * {@code META-INF/services/dev.affinity.nativebridge.ExecutorBackendProvider} and found through
 * {@link java.util.ServiceLoader} by {@link ExecutorBackends}. {@link NativeExecutor} asks the
 * provider of the backend it creates what the JVM must add to the configuration, what the backend
 * can do, and tells it when executors open and close; it never tests a backend's name.
 * Implementations are stateless or thread-safe.
 */
public interface ExecutorBackendProvider {

  /** What a backend can do beyond the {@link dev.affinity.executor.Executor} contract. */
  enum Capability {
    /** It runs a real model and offers that model's tokenizer and chat template. */
    MODEL_TOKENIZER
  }

  /** The backend's name in the native factory and in a worker pool's {@code backend:}. */
  String name();

  /** What the backend can do; none by default. */
  default Set<Capability> capabilities() {
    return Set.of();
  }

  /**
   * The configuration the native factory receives to create an executor: the caller's JSON with
   * what only the JVM knows filled in (paths, extracted libraries). May prepare the process (a
   * shutdown hook). Throws {@link dev.affinity.executor.ExecutorException} naming a problem.
   */
  default String prepareCreate(String configJson) {
    return configJson;
  }

  /**
   * The configuration as a check of its keys sees it ({@link NativeExecutor#checkConfig}): without
   * side effects, nothing is run, extracted or loaded.
   */
  default String prepareCheck(String configJson) {
    return configJson;
  }

  /** An executor of this backend was created. */
  default void opened() {}

  /** An executor of this backend was closed and its native object freed. */
  default void closed() {}
}
