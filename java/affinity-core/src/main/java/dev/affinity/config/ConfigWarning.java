package dev.affinity.config;

/** A configuration that is valid but will not do what it seems to: where, why, and the fix. */
public record ConfigWarning(Location location, String keyPath, String message, String fix) {

  public String format() {
    return location + ": warning: " + (keyPath.isEmpty() ? "" : keyPath + ": ") + message + " Fix: " + fix;
  }

  @Override
  public String toString() {
    return format();
  }
}
