package dev.affinity.server.worker;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;

/**
 * Where a leg body larger than the channel allocator pools is allocated. Netty's adaptive allocator (4.2's default)
 * pools buffers up to 1 MiB and allocates a larger one with {@code ByteBuffer.allocateDirect}: fresh memory from
 * malloc, zeroed, freed again once written. A long agent turn's legs are 2 MB each (a 176k-token history's messages
 * and ids), and that allocation was a ninth of the event loop's time per turn (docs/benchmarks.md, "Agent turns:
 * leg bodies from a pool"). Bodies up to {@link #POOLED_MAX} come from one pooled allocator of 16 MiB chunks instead,
 * reused and never zeroed; larger ones are Netty's huge allocations, as before.
 */
final class LargeBuffers {
  /** The channel allocator's own pooled maximum (Netty's {@code AdaptivePoolingAllocator}): smaller stays there. */
  static final int ADAPTIVE_MAX = 1 << 20;
  /** The largest buffer the pool keeps: its chunk's size (8 KiB pages, order 11). */
  static final int POOLED_MAX = 16 << 20;

  /**
   * Direct only, two arenas (a frontend has one event loop per core; two share an arena's lock, rarely held at
   * once), no thread caches (a 2 MB buffer is not what a thread cache keeps).
   */
  private static final PooledByteBufAllocator POOL = new PooledByteBufAllocator(true, 0,
      Math.min(2, Runtime.getRuntime().availableProcessors()), 8192, 11, 0, 0, false);

  private LargeBuffers() {}

  /** A buffer of {@code capacity} bytes: from {@code alloc} up to its pooled size, else from the large pool. */
  static ByteBuf buffer(ByteBufAllocator alloc, int capacity) {
    return capacity <= ADAPTIVE_MAX ? alloc.buffer(capacity) : POOL.directBuffer(capacity);
  }

  /** The buffers of the large pool not released yet (tests: a written leg gives its buffer back). */
  static long activeBuffers() {
    long n = 0;
    for (io.netty.buffer.PoolArenaMetric arena : POOL.metric().directArenas()) {
      n += arena.numActiveAllocations();
    }
    return n;
  }
}
