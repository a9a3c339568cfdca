package dev.affinity.bench.trace;

/** A trace line that cannot be read; the message names the source, the line and the field. */
public final class TraceFormatException extends RuntimeException {
  private final String source;
  private final long line;

  public TraceFormatException(String source, long line, String problem) {
    super(source + ":" + line + ": " + problem);
    this.source = source;
    this.line = line;
  }

  /** A problem in a file read as one JSON document; {@code problem} names the JSON path. */
  public TraceFormatException(String source, String problem) {
    super(source + ": " + problem);
    this.source = source;
    this.line = 0;
  }

  public String source() {
    return source;
  }

  /** 1-based line number; 0 for a file read as one JSON document. */
  public long line() {
    return line;
  }
}
