package dev.affinity.admission;

import dev.affinity.protocol.ErrorResponse;
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

  public RequestRejectedException(int status, ErrorResponse error) {
    super(Objects.requireNonNull(error, "error").error().message(), null, false, false);
    this.status = status;
    this.error = error;
  }

  public int status() {
    return status;
  }

  public ErrorResponse error() {
    return error;
  }
}
