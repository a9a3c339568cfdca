package dev.affinity.executor;

import java.util.Arrays;
import java.util.Objects;

/**
 * One response: a streamed chunk ({@code isFinal == false}), a final result, or an error
 * ({@link FinishReason#ERROR} with its {@link ExecutorErrorKind kind} and a message). {@code tokens}
 * are the tokens new since the previous response of the same request. {@code contextPhase} is set on
 * the final response of a context-only request. A null {@code errorKind} reads as
 * {@link ExecutorErrorKind#NONE}.
 */
public record ExecutorResponse(
    long requestId,
    long clientRequestId,
    int[] tokens,
    FinishReason finishReason,
    boolean isFinal,
    String errorMessage,
    ExecutorErrorKind errorKind,
    ContextPhaseParams contextPhase,
    RequestMetrics metrics) {

  public ExecutorResponse {
    tokens = tokens == null ? new int[0] : tokens;
    errorMessage = errorMessage == null ? "" : errorMessage;
    errorKind = errorKind == null ? ExecutorErrorKind.NONE : errorKind;
    Objects.requireNonNull(finishReason, "finishReason");
    Objects.requireNonNull(metrics, "metrics");
  }

  public boolean isError() {
    return finishReason == FinishReason.ERROR;
  }

  @Override
  public int[] tokens() {
    return tokens.clone();
  }

  /** Number of new tokens without copying them. */
  public int tokenCount() {
    return tokens.length;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ExecutorResponse r
        && r.requestId == requestId
        && r.clientRequestId == clientRequestId
        && Arrays.equals(r.tokens, tokens)
        && r.finishReason == finishReason
        && r.isFinal == isFinal
        && r.errorMessage.equals(errorMessage)
        && r.errorKind == errorKind
        && Objects.equals(r.contextPhase, contextPhase)
        && r.metrics.equals(metrics);
  }

  @Override
  public int hashCode() {
    return Objects.hash(requestId, clientRequestId, Arrays.hashCode(tokens), finishReason, isFinal, errorMessage,
        errorKind, contextPhase, metrics);
  }

  @Override
  public String toString() {
    return "ExecutorResponse[requestId=" + requestId + ", clientRequestId=" + clientRequestId + ", tokens="
        + Arrays.toString(tokens) + ", finishReason=" + finishReason + ", isFinal=" + isFinal
        + (errorKind == ExecutorErrorKind.NONE ? "" : ", errorKind=" + errorKind)
        + (errorMessage.isEmpty() ? "" : ", error=" + errorMessage)
        + (contextPhase == null ? "" : ", " + contextPhase) + ", " + metrics + "]";
  }
}
