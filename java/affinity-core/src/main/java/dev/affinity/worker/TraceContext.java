package dev.affinity.worker;

import dev.affinity.conversation.HeaderSource;
import java.util.Objects;

/**
 * The W3C trace context (https://www.w3.org/TR/trace-context/) of one hop: the {@code traceparent} header and the
 * {@code tracestate} header that goes with it. A request carries the client's; a worker leg carries the one the
 * frontend hands on ({@link RequestTrace.LegTrace#context()}).
 *
 * @param traceparent {@code version-traceid-parentid-flags}, well-formed (see {@link #isValidTraceparent})
 * @param tracestate the vendor list, or null
 */
public record TraceContext(String traceparent, String tracestate) {
  public static final String TRACEPARENT = "traceparent";
  public static final String TRACESTATE = "tracestate";

  public TraceContext {
    Objects.requireNonNull(traceparent, "traceparent");
    if (tracestate != null && tracestate.isBlank()) {
      tracestate = null;
    }
  }

  /** A request's trace context, or null when it has no well-formed {@code traceparent} (a malformed one is ignored). */
  public static TraceContext from(HeaderSource headers) {
    String parent = headers.first(TRACEPARENT);
    if (parent == null || !isValidTraceparent(parent.strip())) {
      return null;
    }
    return new TraceContext(parent.strip(), headers.first(TRACESTATE));
  }

  /** The 32 hex digits of the trace id. */
  public String traceId() {
    return traceparent.substring(3, 35);
  }

  /** The 16 hex digits of the parent span id. */
  public String spanId() {
    return traceparent.substring(36, 52);
  }

  /**
   * Whether {@code value} is a traceparent of version 00 (or a later version, read as 00 as the specification
   * asks): lower-case hex fields of 2-32-16-2 digits, neither id all zeros, version not ff.
   */
  public static boolean isValidTraceparent(String value) {
    if (value.length() < 55 || value.charAt(2) != '-' || value.charAt(35) != '-' || value.charAt(52) != '-') {
      return false;
    }
    if (value.length() > 55 && (value.startsWith("00") || value.charAt(55) != '-')) {
      return false; // version 00 is exactly 55 characters; later versions may append "-..."
    }
    return hex(value, 0, 2) && !value.startsWith("ff") && hex(value, 3, 35) && hex(value, 36, 52) && hex(value, 53, 55)
        && !zeros(value, 3, 35) && !zeros(value, 36, 52);
  }

  private static boolean hex(String s, int from, int to) {
    for (int i = from; i < to; i++) {
      char c = s.charAt(i);
      if (!(c >= '0' && c <= '9' || c >= 'a' && c <= 'f')) {
        return false;
      }
    }
    return true;
  }

  private static boolean zeros(String s, int from, int to) {
    for (int i = from; i < to; i++) {
      if (s.charAt(i) != '0') {
        return false;
      }
    }
    return true;
  }
}
