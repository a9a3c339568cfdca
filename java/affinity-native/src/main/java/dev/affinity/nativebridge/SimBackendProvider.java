package dev.affinity.nativebridge;

/**
 * The {@code sim} backend: Affinity's CPU executor (docs/cpu-executor.md). Its JSON configuration
 * goes to the native factory as it is; it has no model tokenizer.
 */
public final class SimBackendProvider implements ExecutorBackendProvider {
  /** The backend's name. */
  public static final String NAME = "sim";

  @Override
  public String name() {
    return NAME;
  }
}
