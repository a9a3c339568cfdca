package dev.affinity.executor;

import java.time.Duration;
import java.util.List;

/**
 * An in-process executor: the Java view of the native facade ({@code native/include/affinity/}).
 * All methods are thread-safe. A request with bad input is accepted and answered with an
 * {@link FinishReason#ERROR} response that names the problem; methods throw {@link ExecutorException}
 * only for misuse of the executor itself, and {@link IllegalStateException} once it is closed.
 */
public interface Executor extends AutoCloseable {

  /** Accepts one request; returns its executor request id (> 0). */
  long enqueue(ExecutorRequest request);

  /** Accepts several requests in one native call; returns their ids in order. */
  long[] enqueueAll(List<ExecutorRequest> requests);

  /**
   * Returns up to {@code max} ready responses, waiting up to {@code timeout} while none is ready
   * (a zero timeout polls). Returns an empty list on timeout or once the executor has shut down and
   * every response has been taken.
   */
  List<ExecutorResponse> awaitResponses(int max, Duration timeout);

  /** Cancels a live request (it ends with {@link FinishReason#CANCELLED}); unknown ids are ignored. */
  void cancel(long requestId);

  /** Takes up to {@code max} buffered KV-cache events, oldest first. */
  List<KvEvent> drainKvEvents(int max);

  IterationStats iterationStats();

  /** KV-cache statistics of one attention-DP rank. */
  KvCacheStats kvCacheStats(int rank);

  int numRanks();

  int tokensPerBlock();

  /** The backend's name ({@code sim} for the CPU executor). */
  String backend();

  /** The configuration in effect, defaults filled in, as JSON. */
  String describe();

  /**
   * Whether the backend runs a real model with its own tokenizer ({@code pytorch}); the tokenizer
   * methods below throw {@link UnsupportedOperationException} where it does not.
   */
  default boolean hasModelTokenizer() {
    return false;
  }

  /**
   * A client ended the conversation: the turns the executor retains for it (per-conversation reuse policy) are
   * dropped at once, except blocks other conversations or running requests hold. Default and other policies: nothing
   * to drop.
   */
  default void endConversation(String conversationId) {}

  /** Text to token ids with the model's tokenizer (special tokens added as the model does). */
  default int[] tokenize(String text) {
    throw new UnsupportedOperationException("the " + backend() + " backend has no model tokenizer");
  }

  /** Chat messages (a JSON array of role/content objects) through the model's chat template, with a generation prompt. */
  default int[] tokenizeChat(String messagesJson) {
    throw new UnsupportedOperationException("the " + backend() + " backend has no model tokenizer");
  }

  /** Token ids to text with the model's tokenizer (special tokens skipped). */
  default String detokenize(int[] tokens) {
    throw new UnsupportedOperationException("the " + backend() + " backend has no model tokenizer");
  }

  ClockMode clockMode();

  /** The executor's clock, microseconds since it started. */
  long nowMicros();

  /** Virtual clock only: runs every iteration ending at or before {@code timeMicros}. */
  void advanceTo(long timeMicros);

  /** Virtual clock only: when the current (or next) iteration ends, or -1 when idle. */
  long nextIterationEndMicros();

  /**
   * Stops accepting work; every live request receives one final {@link FinishReason#CANCELLED}
   * response, which {@link #awaitResponses} still returns. Idempotent.
   */
  void shutdown();

  /** True once {@link #close()} has started. */
  boolean isClosed();

  /** Shuts down and frees the executor; waits for calls in flight on other threads to return. */
  @Override
  void close();
}
