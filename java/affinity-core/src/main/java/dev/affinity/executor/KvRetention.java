package dev.affinity.executor;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;

/**
 * A request's KV-cache retention, as TensorRT-LLM's {@code KvCacheRetentionConfig} carries it
 * ({@code tensorrt_llm/executor} {@code executor.h}, {@code kvCacheRetentionConfig.cpp}): token ranges of the prompt
 * whose blocks take a retention priority (0 to 100, default {@value #DEFAULT_PRIORITY}; eviction takes the lowest
 * priority first, least recently used among equals) that reverts to the default a duration after the block is
 * released, and the priority and duration of the blocks past the prompt. The checks are upstream's.
 *
 * @param ranges         token ranges, in any order (upstream sorts them); none overlap and only the last may be open
 * @param decodePriority the priority of the blocks allocated past the prompt
 * @param decodeDurationMs how long it holds once they are released; {@value #NONE}: for good
 */
public record KvRetention(List<TokenRange> ranges, int decodePriority, long decodeDurationMs) {
  /** TensorRT-LLM's {@code kDefaultRetentionPriority}. */
  public static final int DEFAULT_PRIORITY = 35;
  public static final int MIN_PRIORITY = 0;
  public static final int MAX_PRIORITY = 100;
  /** No end (a range to the end of the prompt) or no duration (held for good). */
  public static final int NONE = -1;

  /**
   * The blocks whose first token lies in {@code [start, end)} ({@code end} {@value #NONE}: to the end of the prompt)
   * take {@code priority} until {@code durationMs} after they are released ({@value #NONE}: for good).
   */
  public record TokenRange(int start, int end, int priority, long durationMs) {
    public TokenRange {
      checkPriority(priority, "priority");
      if (start < 0) {
        throw new IllegalArgumentException("token_start " + start + " is negative");
      }
      if (end != NONE && end <= start) {
        throw new IllegalArgumentException("the range [" + start + ", " + end + ") must have a positive, non-zero length");
      }
      checkDuration(durationMs, "duration_ms");
    }
  }

  public KvRetention {
    ranges = List.copyOf(Objects.requireNonNull(ranges, "ranges"));
    checkPriority(decodePriority, "decode_retention_priority");
    checkDuration(decodeDurationMs, "decode_duration_ms");
    List<TokenRange> sorted = new ArrayList<>(ranges);
    sorted.sort(Comparator.comparingInt(TokenRange::start));
    for (int i = 0; i + 1 < sorted.size(); i++) {
      TokenRange r = sorted.get(i);
      if (r.end() == NONE) {
        throw new IllegalArgumentException("only the last token range may be open-ended");
      }
      if (r.end() > sorted.get(i + 1).start()) {
        throw new IllegalArgumentException("token ranges [" + r.start() + ", " + r.end() + ") and ["
            + sorted.get(i + 1).start() + ", ...) overlap");
      }
    }
  }

  /** The whole prompt at {@code priority} for {@code durationMs} after release; the decode blocks as the default. */
  public static KvRetention wholePrompt(int priority, long durationMs) {
    return new KvRetention(List.of(new TokenRange(0, NONE, priority, durationMs)), DEFAULT_PRIORITY, NONE);
  }

  /** The whole prompt at the default priority: puts back a priority an earlier request raised (no duration). */
  public static KvRetention defaults() {
    return wholePrompt(DEFAULT_PRIORITY, NONE);
  }

  private static void checkPriority(int p, String field) {
    if (p < MIN_PRIORITY || p > MAX_PRIORITY) {
      throw new IllegalArgumentException(field + " " + p + " is outside [" + MIN_PRIORITY + ", " + MAX_PRIORITY + "]");
    }
  }

  private static void checkDuration(long ms, String field) {
    if (ms < NONE) {
      throw new IllegalArgumentException(field + " " + ms + " is negative");
    }
  }
}
