package dev.affinity.admission;

import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.ProtocolException;
import java.util.Objects;

/**
 * A request refused at admission: the HTTP status (4xx) and the OpenAI-style error body, which names the
 * offending field or header. Carries no stack trace: a frontend refusing a flood of bad requests should
 * not pay for one each.
 */
public final class RequestRejectedException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final int status;
  private final transient ErrorResponse error;
  private final transient ProtocolException protocolError;

  public RequestRejectedException(int status, ErrorResponse error) {
    this(status, error, null);
  }

  /** A refusal of a field: its status and body, and the error itself, for an API that names fields its own way. */
  public RequestRejectedException(ProtocolException e) {
    this(e.status(), e.toErrorResponse(), e);
  }

  private RequestRejectedException(int status, ErrorResponse error, ProtocolException protocolError) {
    super(Objects.requireNonNull(error, "error").error().message(), null, false, false);
    this.status = status;
    this.error = error;
    this.protocolError = protocolError;
  }

  /**
   * The field error behind this refusal, or null when it is not about a body field (a header, the model): the
   * Responses endpoint names the chat's fields in its own terms ({@code messages} is {@code input}).
   */
  public ProtocolException protocolError() {
    return protocolError;
  }

  public int status() {
    return status;
  }

  public ErrorResponse error() {
    return error;
  }
}
