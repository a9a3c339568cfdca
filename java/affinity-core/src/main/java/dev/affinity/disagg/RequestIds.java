package dev.affinity.disagg;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * TensorRT-LLM's global disaggregated request ids ({@code get_global_disagg_request_id} in {@code tensorrt_llm/llmapi/disagg_utils.py}): a snowflake
 * {@code 0 | timestamp_ms(39) | node_id(8) | process_id(6) | counter(10)} from a monotonic clock,
 * rotated into {@code [2^40, 2^63 - 1)} so that it never collides with a worker's local ids.
 */
public final class RequestIds {
  public static final long MIN_GLOBAL_ID = 1L << 40;
  private final int nodeId;
  private final int processId;
  private final LongSupplier millis;
  private final AtomicLong counter = new AtomicLong();

  public RequestIds(int nodeId, int processId, LongSupplier monotonicMillis) {
    if (nodeId < 0 || nodeId > 255 || processId < 0 || processId > 63) {
      throw new IllegalArgumentException("node id must be in [0, 255] and process id in [0, 63]: " + nodeId + ", " + processId);
    }
    this.nodeId = nodeId;
    this.processId = processId;
    this.millis = monotonicMillis;
  }

  /** With the JVM's monotonic clock. */
  public RequestIds(int nodeId) {
    this(nodeId, 0, () -> System.nanoTime() / 1_000_000L);
  }

  public long next() {
    long ts = millis.getAsLong() & ((1L << 39) - 1);
    long c = counter.getAndIncrement() & 0x3FF;
    long raw = (ts << 24) | ((long) nodeId << 16) | ((long) processId << 10) | c;
    return raw % (Long.MAX_VALUE - MIN_GLOBAL_ID) + MIN_GLOBAL_ID;
  }
}
