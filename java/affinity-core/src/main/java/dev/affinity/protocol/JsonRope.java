package dev.affinity.protocol;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.json.UTF8JsonGenerator;
import java.io.IOException;
import java.io.OutputStream;
import java.util.Arrays;

/**
 * A JSON value already written, as UTF-8, kept as pieces of arrays that a conversation's next turn shares: its
 * leading bytes ({@link #prefix}) are the same arrays, and only what the turn adds is written ({@link #append}). A
 * long agent turn's messages and ids were copied whole into a new array every turn, and written from it into each
 * leg (docs/benchmarks.md, "Agent turns: leg bodies from a pool, history kept in pieces"); now a turn copies only its
 * own bytes, and a leg's body gets each piece straight from the array it lies in ({@link #writeValue}).
 *
 * <p>The pieces stay few: after an append, the last two are joined while the one before the last is less than twice
 * the last's size, as a binary counter carries. So a rope of n appends has O(log n) pieces, and a byte is copied
 * O(log n) times over all the turns that share it, where it was copied at every turn.
 *
 * <p>Immutable; the arrays are never written after they join a rope.
 */
final class JsonRope {
  private static final JsonRope EMPTY = new JsonRope(new byte[0][], new int[0], new int[0], 0);

  private final byte[][] arrays;
  /** Where each piece starts in its array. */
  private final int[] offsets;
  /** Each piece's length; none is 0. */
  private final int[] lengths;
  private final int length;

  private JsonRope(byte[][] arrays, int[] offsets, int[] lengths, int length) {
    this.arrays = arrays;
    this.offsets = offsets;
    this.lengths = lengths;
    this.length = length;
  }

  /** {@code bytes} as one piece (not copied: the caller must not change them). */
  static JsonRope of(byte[] bytes) {
    return bytes.length == 0 ? EMPTY : new JsonRope(new byte[][] {bytes}, new int[] {0}, new int[] {bytes.length},
        bytes.length);
  }

  /** The bytes. */
  int length() {
    return length;
  }

  /** How many pieces (for tests). */
  int pieces() {
    return arrays.length;
  }

  /** The first {@code n} bytes: the same arrays, the last piece cut short. */
  JsonRope prefix(int n) {
    if (n < 0 || n > length) {
      throw new IndexOutOfBoundsException("prefix " + n + " of " + length);
    }
    if (n == length) {
      return this;
    }
    int count = 0;
    int at = 0;
    while (at + lengths[count] < n) {
      at += lengths[count++];
    }
    // piece `count` holds byte n - 1 (n > 0) or n == 0
    if (n == 0) {
      return EMPTY;
    }
    int k = count + 1;
    int[] ls = Arrays.copyOf(lengths, k);
    ls[count] = n - at;
    return new JsonRope(Arrays.copyOf(arrays, k), Arrays.copyOf(offsets, k), ls, n);
  }

  /**
   * These bytes, then {@code bytes} (not copied: the caller must not change them); the last pieces joined while the
   * one before the last is less than twice the last's size.
   */
  JsonRope append(byte[] bytes) {
    if (bytes.length == 0) {
      return this;
    }
    int n = arrays.length;
    byte[][] as = Arrays.copyOf(arrays, n + 1);
    int[] os = Arrays.copyOf(offsets, n + 1);
    int[] ls = Arrays.copyOf(lengths, n + 1);
    as[n] = bytes;
    os[n] = 0;
    ls[n] = bytes.length;
    n++;
    while (n >= 2 && ls[n - 2] < 2L * ls[n - 1]) {
      byte[] joined = new byte[ls[n - 2] + ls[n - 1]];
      System.arraycopy(as[n - 2], os[n - 2], joined, 0, ls[n - 2]);
      System.arraycopy(as[n - 1], os[n - 1], joined, ls[n - 2], ls[n - 1]);
      n--;
      as[n - 1] = joined;
      os[n - 1] = 0;
      ls[n - 1] = joined.length;
    }
    return new JsonRope(Arrays.copyOf(as, n), Arrays.copyOf(os, n), Arrays.copyOf(ls, n),
        Math.addExact(length, bytes.length));
  }

  /** Whether {@code bytes} holds exactly these bytes from {@code at} (compared at memory speed, piece by piece). */
  boolean equalsAt(byte[] bytes, int at) {
    if (at < 0 || (long) at + length > bytes.length) {
      return false;
    }
    for (int i = 0; i < arrays.length; i++) {
      if (!Arrays.equals(bytes, at, at + lengths[i], arrays[i], offsets[i], offsets[i] + lengths[i])) {
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
    for (int i = 0; i < arrays.length; i++) {
      System.arraycopy(arrays[i], offsets[i], out, at, lengths[i]);
      at += lengths[i];
    }
    return out;
  }

  /** Writes the bytes to {@code out}, piece by piece. */
  void writeTo(OutputStream out) throws IOException {
    for (int i = 0; i < arrays.length; i++) {
      out.write(arrays[i], offsets[i], lengths[i]);
    }
  }

  /**
   * Writes the bytes as the next value of {@code gen}: a UTF-8 generator without a pretty printer writing to a stream
   * writes the separator its context needs (an empty raw value), is flushed, and the pieces go to its stream from
   * their arrays (one copy, into the stream's buffer); any other generator gets them as one raw value.
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
