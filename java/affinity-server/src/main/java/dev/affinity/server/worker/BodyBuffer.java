package dev.affinity.server.worker;

import dev.affinity.protocol.ProtocolException;
import io.netty.buffer.ByteBuf;
import java.util.Arrays;

/** A worker's answer body collected from its pieces (copied out of Netty's buffers), up to a limit. */
final class BodyBuffer {
  /** The largest answer body accepted. */
  static final int MAX_BYTES = 256 << 20;

  private static final byte[] EMPTY = new byte[0];

  /** The most a declared length sizes the buffer to before the bytes arrive (a larger body grows it as it comes). */
  static final int MAX_PRESIZE = 16 << 20;

  /**
   * Sized by the declared length, else by the first piece (often the whole answer), so that {@link #toArray()} then
   * hands it over uncopied.
   */
  private byte[] bytes = EMPTY;
  private int length;

  BodyBuffer() {}

  /**
   * A buffer for a body of {@code declaredLength} bytes (its {@code Content-Length}; negative: unknown), allocated
   * once where that is at most {@link #MAX_PRESIZE}: a context answer of a long history (a megabyte of ids, in pieces
   * of tens of kilobytes) is then not copied at each doubling and again at the end.
   */
  BodyBuffer(long declaredLength) {
    if (declaredLength > 0 && declaredLength <= MAX_PRESIZE) {
      bytes = new byte[(int) declaredLength];
    }
  }

  /**
   * Appends the readable bytes of {@code piece} (its reader index is left alone).
   *
   * @throws ProtocolException (502) past {@link #MAX_BYTES}
   */
  void append(ByteBuf piece) {
    int n = piece.readableBytes();
    if (length + n > MAX_BYTES) {
      throw ProtocolException.of(ProtocolException.BAD_GATEWAY, "the answer is larger than " + MAX_BYTES + " bytes",
          null);
    }
    if (length + n > bytes.length) {
      bytes = length == 0 && bytes.length == 0 ? new byte[n]
          : Arrays.copyOf(bytes, Math.max(bytes.length * 2, length + n));
    }
    piece.getBytes(piece.readerIndex(), bytes, length, n);
    length += n;
  }

  /** The body so far. */
  byte[] toArray() {
    return length == bytes.length ? bytes : Arrays.copyOf(bytes, length);
  }
}
