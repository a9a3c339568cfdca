package dev.affinity.protocol;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.Objects;

/**
 * The JSON body of every 4xx/5xx the frontend itself produces, OpenAI style:
 * {@code {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}}. {@code param} is the JSON
 * path of the offending field or null; {@code code} is the HTTP status. All four keys are always written.
 */
@JsonInclude(JsonInclude.Include.ALWAYS)
public record ErrorResponse(@JsonProperty("error") ErrorDetail error) {

  public ErrorResponse {
    Objects.requireNonNull(error, "error");
  }

  /** The inner object. */
  @JsonInclude(JsonInclude.Include.ALWAYS)
  public record ErrorDetail(
      @JsonProperty("message") String message,
      @JsonProperty("type") String type,
      @JsonProperty("param") String param,
      @JsonProperty("code") Integer code) {}

  /** An error body for {@code status} with the type {@link #typeFor(int)}. */
  public static ErrorResponse of(int status, String message, String param) {
    return new ErrorResponse(new ErrorDetail(message, typeFor(status), param, status));
  }

  /** The body for a protocol error. */
  public static ErrorResponse of(ProtocolException e) {
    return e.toErrorResponse();
  }

  /** OpenAI error type for an HTTP status. */
  public static String typeFor(int status) {
    return switch (status) {
      case 400, 413, 415, 422 -> "invalid_request_error";
      case 401 -> "authentication_error";
      case 403 -> "permission_error";
      case 404 -> "not_found_error";
      case 408, 504 -> "timeout_error";
      case 429 -> "rate_limit_error";
      case 503 -> "service_unavailable_error";
      default -> status >= 500 ? "server_error" : "invalid_request_error";
    };
  }
}
