package dev.affinity.bench.trace;

import java.util.List;
import java.util.Objects;

/**
 * One request of a trace: when it arrives, whose session it belongs to, its prompt as a chain of
 * token blocks and how many tokens it generates.
 *
 * <p>The prompt is described the way the Mooncake traces do it: {@code hashIds[i]} names block
 * {@code i} together with every block before it, so two requests that share the id at position
 * {@code i} share their first {@code (i + 1) * blockSize} prompt tokens. {@link BlockTokens}
 * turns the ids into concrete token ids.
 *
 * @param arrivalMs       arrival time in milliseconds from the start of the trace
 * @param sessionId       the request's own session (conversation) id, or null when the trace has none
 * @param parentSessionId the parent agent's session id for a sub-agent request, or null
 * @param inputLength     prompt length in tokens (at least 1)
 * @param outputLength    tokens to generate (at least 1)
 * @param blockSize       tokens per block that a hash id stands for
 * @param hashIds         prefix-chained block ids; exactly {@code ceil(inputLength / blockSize)} of them
 * @param stopReason      how the recorded call ended ({@code tool_use}: in a tool call; {@code end_turn}, ...), or
 *                        null when the trace does not say
 */
public record TraceRequest(double arrivalMs, String sessionId, String parentSessionId, int inputLength,
    int outputLength, int blockSize, List<Long> hashIds, String stopReason) {

  /** The stop reason a call that ended in a tool call has (Anthropic's {@code stop_reason}). */
  public static final String TOOL_USE = "tool_use";

  /** A request whose stop reason the trace does not say. */
  public TraceRequest(double arrivalMs, String sessionId, String parentSessionId, int inputLength, int outputLength,
      int blockSize, List<Long> hashIds) {
    this(arrivalMs, sessionId, parentSessionId, inputLength, outputLength, blockSize, hashIds, null);
  }

  /** Whether the recorded call ended in a tool call; null when the trace does not say. */
  public Boolean endedInToolCall() {
    return stopReason == null ? null : TOOL_USE.equals(stopReason);
  }

  public TraceRequest {
    Objects.requireNonNull(hashIds, "hashIds");
    hashIds = List.copyOf(hashIds);
    if (!Double.isFinite(arrivalMs) || arrivalMs < 0) {
      throw new IllegalArgumentException("arrival_ms must be a finite number >= 0, got " + arrivalMs);
    }
    if (inputLength < 1) {
      throw new IllegalArgumentException("input_length must be >= 1, got " + inputLength);
    }
    if (outputLength < 1) {
      throw new IllegalArgumentException("output_length must be >= 1, got " + outputLength);
    }
    if (blockSize < 1) {
      throw new IllegalArgumentException("block_size must be >= 1, got " + blockSize);
    }
    int blocks = blocksFor(inputLength, blockSize);
    if (hashIds.size() != blocks) {
      throw new IllegalArgumentException("field 'hash_ids' has " + hashIds.size() + " ids but input_length " + inputLength
          + " needs ceil(" + inputLength + " / " + blockSize + ") = " + blocks);
    }
    for (Long id : hashIds) {
      if (id < 0) {
        throw new IllegalArgumentException("hash_ids must be >= 0, got " + id);
      }
    }
    if (parentSessionId != null && sessionId == null) {
      throw new IllegalArgumentException("field 'parent_session_id' needs a 'session_id'");
    }
  }

  /** The number of blocks a prompt of {@code inputLength} tokens spans. */
  public static int blocksFor(int inputLength, int blockSize) {
    return (int) ((inputLength + (long) blockSize - 1) / blockSize);
  }

  /** The same request arriving at {@code ms}. */
  public TraceRequest withArrivalMs(double ms) {
    return new TraceRequest(ms, sessionId, parentSessionId, inputLength, outputLength, blockSize, hashIds, stopReason);
  }
}
