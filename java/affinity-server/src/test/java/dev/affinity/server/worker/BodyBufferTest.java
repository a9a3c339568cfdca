package dev.affinity.server.worker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** A body collected from one piece or several is the bytes in order, whatever the sizes. */
class BodyBufferTest {

  @Test
  void collectsPiecesInOrder() {
    assertArrayEquals(new byte[0], new BodyBuffer().toArray());
    for (int[] sizes : new int[][] {{1}, {700}, {3, 5}, {1000, 1, 2000}, {0, 4, 0, 9}}) {
      BodyBuffer b = new BodyBuffer();
      StringBuilder all = new StringBuilder();
      int k = 0;
      for (int n : sizes) {
        String piece = "x".repeat(n).replace('x', (char) ('a' + k++ % 26));
        all.append(piece);
        ByteBuf buf = Unpooled.copiedBuffer(piece, StandardCharsets.US_ASCII);
        b.append(buf);
        buf.release();
      }
      assertArrayEquals(all.toString().getBytes(StandardCharsets.US_ASCII), b.toArray());
    }
  }

  @Test
  void aDeclaredLengthSizesItOnceAndAWrongOneStillGivesTheBytes() {
    byte[] answer = "0123456789".repeat(3000).getBytes(StandardCharsets.US_ASCII);
    for (long declared : new long[] {answer.length, 10, answer.length + 500, -1, 0, BodyBuffer.MAX_PRESIZE + 1L}) {
      BodyBuffer b = new BodyBuffer(declared);
      for (int at = 0; at < answer.length; at += 4096) {
        ByteBuf piece = Unpooled.wrappedBuffer(answer, at, Math.min(4096, answer.length - at));
        b.append(piece);
      }
      byte[] out = b.toArray();
      assertArrayEquals(answer, out, "declared " + declared);
      if (declared == answer.length) {
        assertSame(out, b.toArray(), "filled exactly: handed over as it is");
      }
    }
  }
}
