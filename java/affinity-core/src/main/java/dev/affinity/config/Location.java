package dev.affinity.config;

/** Where a configuration value sits: file, 1-based line and column. */
public record Location(String file, int line, int column) {

  public static Location unknown(String file) {
    return new Location(file, 0, 0);
  }

  @Override
  public String toString() {
    return line <= 0 ? file : file + ":" + line + ":" + column;
  }
}
