package dev.affinity.protocol;

/**
 * A request or response body that cannot be accepted. Carries the HTTP status to answer with, the JSON
 * path of the offending field ({@code messages[2].content}, {@code max_tokens}; {@code null} when the
 * problem is not tied to one field, e.g. malformed JSON), a detail a client can act on, and for malformed
 * JSON the position of the error.
 *
 * <p>{@link #getMessage()} is {@code "<field>: <detail>"}, or just the detail when there is no field.
 */
public final class ProtocolException extends RuntimeException {

  /** Status for a client body that is rejected. */
  public static final int BAD_REQUEST = 400;
  /** Status for a worker body that cannot be understood. */
  public static final int BAD_GATEWAY = 502;

  private final int status;
  private final String field;
  private final String detail;
  private final long line;
  private final long column;
  private final long byteOffset;

  private ProtocolException(int status, String field, String detail, long line, long column, long byteOffset,
      Throwable cause) {
    this(status, field, detail, line, column, byteOffset, cause, true);
  }

  /**
   * {@code stackTrace == false} for copies and for errors derived from a parser exception: the cause
   * carries the trace, and a frontend rejecting a flood of bad bodies should not pay for another one.
   */
  private ProtocolException(int status, String field, String detail, long line, long column, long byteOffset,
      Throwable cause, boolean stackTrace) {
    super(field == null || field.isEmpty() ? detail : field + ": " + detail, cause, true, stackTrace);
    this.status = status;
    this.field = field == null || field.isEmpty() ? null : field;
    this.detail = detail;
    this.line = line;
    this.column = column;
    this.byteOffset = byteOffset;
  }

  /** A 400 about one field; {@code field} is relative to the object being built when thrown by a constructor. */
  public static ProtocolException invalidField(String field, String detail) {
    return new ProtocolException(BAD_REQUEST, field, detail, -1, -1, -1, null);
  }

  /** A 400 about one field, caused by {@code cause} (which keeps the stack trace). */
  public static ProtocolException invalidField(String field, String detail, Throwable cause) {
    return new ProtocolException(BAD_REQUEST, field, detail, -1, -1, -1, cause, cause == null);
  }

  /** An error not tied to a field. */
  public static ProtocolException of(int status, String detail, Throwable cause) {
    return new ProtocolException(status, null, detail, -1, -1, -1, cause, cause == null);
  }

  /** A body that is not well-formed JSON; positions are 1-based line/column and 0-based byte offset, -1 if unknown. */
  public static ProtocolException malformed(int status, String detail, long line, long column, long byteOffset,
      Throwable cause) {
    return new ProtocolException(status, null, detail, line, column, byteOffset, cause, cause == null);
  }

  /** HTTP status to answer with (400 for client bodies, 502 for worker bodies). */
  public int status() {
    return status;
  }

  /** JSON path of the offending field, or {@code null}. */
  public String field() {
    return field;
  }

  /** What is wrong, without the field prefix. */
  public String detail() {
    return detail;
  }

  /** 1-based line of a JSON syntax error, or -1. */
  public long line() {
    return line;
  }

  /** 1-based column of a JSON syntax error, or -1. */
  public long column() {
    return column;
  }

  /** 0-based byte offset of a JSON syntax error, or -1. */
  public long byteOffset() {
    return byteOffset;
  }

  /** The same error with {@code prefix} put in front of the field path ({@code messages[2]} + {@code role}). */
  public ProtocolException withFieldPrefix(String prefix) {
    return new ProtocolException(status, Json.joinPath(prefix, field), detail, line, column, byteOffset, this,
        false);
  }

  /** The same error answered with another status. */
  public ProtocolException withStatus(int newStatus) {
    return newStatus == status ? this
        : new ProtocolException(newStatus, field, detail, line, column, byteOffset, this, false);
  }

  /** The OpenAI-style body for this error. */
  public ErrorResponse toErrorResponse() {
    return ErrorResponse.of(status, getMessage(), field);
  }
}
