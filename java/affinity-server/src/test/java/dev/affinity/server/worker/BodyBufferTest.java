package dev.affinity.server.worker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

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
}
