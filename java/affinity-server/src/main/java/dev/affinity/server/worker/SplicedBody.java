package dev.affinity.server.worker;

import dev.affinity.protocol.JsonSplice;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.function.IntFunction;

/**
 * A leg's request as it is written: the head's room and the body's bytes in one buffer, and where the body carries a
 * conversation's kept JSON (its messages and ids, {@code dev.affinity.protocol.JsonRope}), those pieces as they lie,
 * between the buffers of what is written around them. The socket then reads a long agent turn's history from the
 * memory it is kept in: the 4 MB of a 176k-token turn's two legs are not copied into a write buffer first
 * (docs/benchmarks.md, "Agent turns: leg bodies from a pool, history kept in pieces"). Pieces under
 * {@link #SPLICE_MIN} bytes are copied, so a short request stays one buffer.
 *
 * <p>Not thread-safe: one write, on the connection's loop.
 */
final class SplicedBody extends OutputStream implements JsonSplice {
  /** Pieces shorter than this are copied: a buffer of their own would cost more than the copy. */
  static final int SPLICE_MIN = 16 << 10;
  /** The first size of a buffer for what is written after a piece (grown as written). */
  private static final int AFTER_PIECE = 4096;

  private final ByteBufAllocator alloc;
  /** The head's room ({@code room} bytes) and the body's first bytes. */
  private final ByteBuf first;
  private final int room;
  /** Where writes go: {@link #first} until a piece is spliced. */
  private ByteBuf current;
  /** After {@link #first}: pieces and the buffers written between them; null until a piece is spliced. */
  private CompositeByteBuf rest;

  /** A body written into {@code first}, after its first {@code room} bytes (the head's, written last). */
  SplicedBody(ByteBufAllocator alloc, ByteBuf first, int room) {
    this.alloc = alloc;
    this.first = first;
    this.room = room;
    this.current = first;
    first.writerIndex(first.writerIndex() + room);
  }

  @Override
  public void write(int b) {
    current.writeByte(b);
  }

  @Override
  public void write(byte[] b, int off, int len) {
    current.writeBytes(b, off, len);
  }

  @Override
  public void splice(ByteBuffer piece) {
    if (piece.remaining() < SPLICE_MIN) {
      current.writeBytes(piece);
      return;
    }
    if (rest == null) {
      rest = alloc.compositeDirectBuffer(Integer.MAX_VALUE);  // never consolidated: that would copy the pieces
    }
    if (current != first) {
      addCurrent();
    }
    rest.addComponent(true, Unpooled.wrappedBuffer(piece));
    current = alloc.directBuffer(AFTER_PIECE);
  }

  private void addCurrent() {
    if (current.isReadable()) {
      rest.addComponent(true, current);
    } else {
      current.release();
    }
  }

  /**
   * The request: the head {@code head} gives for the body's length written into the room before the body; the
   * buffers and pieces after. Called once; the caller owns the result.
   */
  ByteBuf finish(IntFunction<byte[]> head) {
    int firstBody = first.writerIndex() - first.readerIndex() - room;
    if (rest != null && current != first) {
      addCurrent();
    }
    int length = firstBody + (rest == null ? 0 : rest.readableBytes());
    byte[] h = head.apply(length);
    int start = first.readerIndex() + room - h.length;
    first.setBytes(start, h);
    first.readerIndex(start);
    if (rest == null) {
      return first;
    }
    rest.addComponent(true, 0, first);
    return rest;
  }

  /** Gives back every buffer, when the body could not be written. */
  void discard() {
    if (current != first && current != null) {
      current.release();
    }
    first.release();
    if (rest != null) {
      rest.release();
    }
    current = null;
  }
}
