package dev.affinity.config;

/** One configuration error: where, which key, and what was expected versus found. */
public record ConfigProblem(Location location, String keyPath, String message) {

  /** {@code file:line:col: key.path: message} */
  public String format() {
    return location + ": " + (keyPath.isEmpty() ? "" : keyPath + ": ") + message;
  }

  @Override
  public String toString() {
    return format();
  }
}
