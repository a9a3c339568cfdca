package dev.affinity.protocol;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.json.UTF8JsonGenerator;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * A JSON value already written, as UTF-8, kept as pieces of arrays that a conversation's next turn shares: its
 * leading bytes ({@link #prefix}) are the same arrays, and only what the turn adds is written ({@link #append}). A
 * long agent turn's messages and ids were copied whole into a new array every turn, and written from it into each
 * leg (docs/benchmarks.md, "Agent turns: leg bodies from a pool, history kept in pieces"); now a turn copies only its
 * own bytes. The pieces lie outside the heap (direct buffers, freed with the last rope that holds them), so that a
 * leg body written to a {@link JsonSplice} takes them as they are and the socket reads them from where they lie
 * ({@link #writeValue}): the history's bytes are not copied on their way to a worker but by the kernel.
 *
 * <p>The pieces stay few: after an append, the last two are joined while the one before the last is less than twice
 * the last's size, as a binary counter carries. So a rope of n appends has O(log n) pieces, and a byte is copied
 * O(log n) times over all the turns that share it, where it was copied at every turn.
 *
 * <p>Immutable; a piece's memory is never written after it joins a rope.
 */
final class JsonRope {
  private static final JsonRope EMPTY = new JsonRope(new ByteBuffer[0], new int[0], new int[0], 0);
  /** The bytes copied into new pieces since the process started (tests: a turn copies what it adds). */
  static final java.util.concurrent.atomic.LongAdder COPIED = new java.util.concurrent.atomic.LongAdder();
  /** The most bytes copied at a time through the heap, where a stream takes no pieces. */
  private static final int COPY = 1 << 16;

  /** Direct buffers, whole (position 0, limit their capacity); never written after they join a rope. */
  private final ByteBuffer[] buffers;
  /** Where each piece starts in its buffer. */
  private final int[] offsets;
  /** Each piece's length; none is 0. */
  private final int[] lengths;
  private final int length;

  private JsonRope(ByteBuffer[] buffers, int[] offsets, int[] lengths, int length) {
    this.buffers = buffers;
    this.offsets = offsets;
    this.lengths = lengths;
    this.length = length;
  }

  /** {@code bytes} as one piece (copied out of the heap). */
  static JsonRope of(byte[] bytes) {
    return bytes.length == 0 ? EMPTY : new JsonRope(new ByteBuffer[] {direct(bytes)}, new int[] {0},
        new int[] {bytes.length}, bytes.length);
  }

  private static ByteBuffer direct(byte[] bytes) {
    ByteBuffer b = ByteBuffer.allocateDirect(bytes.length);
    b.put(bytes);
    COPIED.add(bytes.length);
    return b.clear();
  }

  /** The bytes. */
  int length() {
    return length;
  }

  /** How many pieces (for tests). */
  int pieces() {
    return buffers.length;
  }

  /** Piece {@code i}'s bytes, on their own: a view of its memory, not a copy. */
  private ByteBuffer piece(int i) {
    return buffers[i].slice(offsets[i], lengths[i]);
  }

  /** The first {@code n} bytes: the same memory, the last piece cut short. */
  JsonRope prefix(int n) {
    if (n < 0 || n > length) {
      throw new IndexOutOfBoundsException("prefix " + n + " of " + length);
    }
    if (n == length) {
      return this;
    }
    if (n == 0) {
      return EMPTY;
    }
    int count = 0;
    int at = 0;
    while (at + lengths[count] < n) {
      at += lengths[count++];
    }
    int k = count + 1;  // piece `count` holds byte n - 1
    int[] ls = Arrays.copyOf(lengths, k);
    ls[count] = n - at;
    return new JsonRope(Arrays.copyOf(buffers, k), Arrays.copyOf(offsets, k), ls, n);
  }

  /**
   * These bytes, then {@code bytes} (copied out of the heap); the last pieces joined while the one before the last is
   * less than twice the last's size.
   */
  JsonRope append(byte[] bytes) {
    if (bytes.length == 0) {
      return this;
    }
    int n = buffers.length;
    ByteBuffer[] bs = Arrays.copyOf(buffers, n + 1);
    int[] os = Arrays.copyOf(offsets, n + 1);
    int[] ls = Arrays.copyOf(lengths, n + 1);
    int last = n;
    n++;
    // the pieces the carries join are copied once, with the new bytes, into one new buffer
    long joined = bytes.length;
    while (last > 0 && ls[last - 1] < 2L * joined) {
      last--;
      joined += ls[last];
    }
    ByteBuffer b = ByteBuffer.allocateDirect(Math.toIntExact(joined));
    COPIED.add(joined);
    for (int i = last; i < n - 1; i++) {
      b.put(bs[i].slice(os[i], ls[i]));
    }
    b.put(bytes).clear();
    bs[last] = b;
    os[last] = 0;
    ls[last] = b.capacity();
    n = last + 1;
    return new JsonRope(Arrays.copyOf(bs, n), Arrays.copyOf(os, n), Arrays.copyOf(ls, n),
        Math.addExact(length, bytes.length));
  }

  /** Whether {@code bytes} holds exactly these bytes from {@code at} (compared at memory speed, piece by piece). */
  boolean equalsAt(byte[] bytes, int at) {
    if (at < 0 || (long) at + length > bytes.length) {
      return false;
    }
    for (int i = 0; i < buffers.length; i++) {
      if (ByteBuffer.wrap(bytes, at, lengths[i]).mismatch(piece(i)) >= 0) {
        return false;
      }
      at += lengths[i];
    }
    return true;
  }

  /** The bytes in one new array. */
  byte[] toByteArray() {
    byte[] out = new byte[length];
    int at = 0;
    for (int i = 0; i < buffers.length; i++) {
      piece(i).get(out, at, lengths[i]);
      at += lengths[i];
    }
    return out;
  }

  /** Writes the bytes to {@code out}: each piece as it lies to a {@link JsonSplice}, else copied through the heap. */
  void writeTo(OutputStream out) throws IOException {
    if (out instanceof JsonSplice splice) {
      for (int i = 0; i < buffers.length; i++) {
        splice.splice(piece(i).asReadOnlyBuffer());
      }
      return;
    }
    byte[] copy = new byte[Math.min(length, COPY)];
    for (int i = 0; i < buffers.length; i++) {
      ByteBuffer p = piece(i);
      while (p.hasRemaining()) {
        int k = Math.min(copy.length, p.remaining());
        p.get(copy, 0, k);
        out.write(copy, 0, k);
      }
    }
  }

  /**
   * Writes the bytes as the next value of {@code gen}: a UTF-8 generator without a pretty printer writing to a stream
   * writes the separator its context needs (an empty raw value), is flushed, and the pieces go to its stream
   * ({@link #writeTo}); any other generator gets them as one raw value.
   */
  void writeValue(JsonGenerator gen) throws IOException {
    if (gen instanceof UTF8JsonGenerator && gen.getPrettyPrinter() == null
        && gen.getOutputTarget() instanceof OutputStream out) {
      gen.writeRawValue("");
      gen.flush();
      writeTo(out);
    } else {
      gen.writeRawValue(new String(toByteArray(), java.nio.charset.StandardCharsets.UTF_8));
    }
  }
}
