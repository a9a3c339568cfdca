package dev.affinity.nativebridge;

import dev.affinity.nativebridge.peer.KvEventBatchPeer;
import dev.affinity.nativebridge.peer.RequestBatchPeer;
import dev.affinity.nativebridge.peer.RequestSpecPeer;
import dev.affinity.nativebridge.peer.ResponseBatchPeer;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.LongPointer;

/**
 * Native buffers for one call at a time: a request spec, a token buffer, a request batch, a response
 * batch, a KV event batch and copy-out buffers. Pooled and reused across calls (a call takes one
 * from the pool and returns it), because allocating JavaCPP pointers per call dominates short calls
 * (each allocation checks the process's physical memory).
 */
final class Scratch {
  final RequestSpecPeer spec = new RequestSpecPeer();
  final ResponseBatchPeer responses = new ResponseBatchPeer();
  final KvEventBatchPeer kvEvents = new KvEventBatchPeer();
  final RequestBatchPeer batch = new RequestBatchPeer();
  private IntPointer tokens = new IntPointer(256);
  private LongPointer longsOut = new LongPointer(256);
  private IntPointer intsOut = new IntPointer(256);

  /** A buffer of at least {@code n} longs (contents undefined). */
  LongPointer longs(int n) {
    if (longsOut.capacity() < n) {
      longsOut.close();
      longsOut = new LongPointer(Math.max(n, longsOut.capacity() * 2));
    }
    return longsOut.position(0);
  }

  /** A buffer of at least {@code n} ints (contents undefined). */
  IntPointer ints(int n) {
    if (intsOut.capacity() < n) {
      intsOut.close();
      intsOut = new IntPointer(Math.max(n, intsOut.capacity() * 2));
    }
    return intsOut.position(0);
  }

  /** The values in the token buffer. */
  IntPointer tokens(int[] values) {
    if (tokens.capacity() < values.length) {
      tokens.close();
      tokens = new IntPointer(Math.max(values.length, tokens.capacity() * 2));
    }
    tokens.position(0).put(values, 0, values.length);
    return tokens;
  }

  /** {@code count} ints that copier writes into the int buffer, as an array. */
  int[] copyInts(int count, java.util.function.Consumer<IntPointer> copier) {
    int[] out = new int[count];
    if (count > 0) {
      IntPointer p = ints(count);
      copier.accept(p);
      p.get(out, 0, count);
    }
    return out;
  }

  /** {@code count} longs that copier writes into the long buffer, as an array. */
  long[] copyLongs(int count, java.util.function.Consumer<LongPointer> copier) {
    long[] out = new long[count];
    if (count > 0) {
      LongPointer p = longs(count);
      copier.accept(p);
      p.get(out, 0, count);
    }
    return out;
  }

  void free() {
    spec.close();
    responses.close();
    kvEvents.close();
    batch.close();
    tokens.close();
    longsOut.close();
    intsOut.close();
  }
}
