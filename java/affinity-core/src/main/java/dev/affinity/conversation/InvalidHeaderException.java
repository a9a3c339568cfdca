package dev.affinity.conversation;

/** A routing header with a value that is too long or contains control characters (HTTP 400). */
public class InvalidHeaderException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final String header;

  public InvalidHeaderException(String header, String message) {
    super(message);
    this.header = header;
  }

  /** The offending header's name, as configured. */
  public String header() {
    return header;
  }
}
