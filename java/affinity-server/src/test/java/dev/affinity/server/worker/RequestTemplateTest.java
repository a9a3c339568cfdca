package dev.affinity.server.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequestEncoder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A leg written as bytes is exactly what Netty's request encoder writes for the same request, its body an array or
 * written into the buffer (shorter or longer than its hint).
 */
class RequestTemplateTest {

  private static String netty(RequestTemplate t) {
    EmbeddedChannel ch = new EmbeddedChannel(new HttpRequestEncoder());
    ch.writeOutbound(t.toRequest());
    StringBuilder out = new StringBuilder();
    for (ByteBuf b = ch.readOutbound(); b != null; b = ch.readOutbound()) {
      out.append(b.toString(StandardCharsets.ISO_8859_1));
      b.release();
    }
    ch.finishAndReleaseAll();
    return out.toString();
  }

  private static String encoded(RequestTemplate t) {
    ByteBuf b = t.encode(ByteBufAllocator.DEFAULT);
    try {
      return b.toString(StandardCharsets.ISO_8859_1);
    } finally {
      b.release();
    }
  }

  @Test
  void bytesAreNettysEncoding() {
    byte[] json = "{\"model\":\"m\",\"prompt\":\"caf\u00e9 \u2603\",\"max_tokens\":4}".getBytes(StandardCharsets.UTF_8);
    List<RequestTemplate.Header> headers = List.of(new RequestTemplate.Header("content-type", "application/json"),
        new RequestTemplate.Header("x-affinity-id", "agent-\u00e9"), new RequestTemplate.Header("traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
    List<RequestTemplate> cases = List.of(
        RequestTemplate.of(HttpMethod.GET, "/health", "127.0.0.1:8000"),
        RequestTemplate.of(HttpMethod.GET, "", "h:1"),
        new RequestTemplate(HttpMethod.POST, "/v1/completions", "worker.example:8001", headers, json),
        new RequestTemplate(HttpMethod.POST, "/base/v1/chat/completions?x=1", "w:2", headers, new byte[0]),
        new RequestTemplate(HttpMethod.POST, "/kv_cache_events", "w:2", List.of(), null,
            () -> new RequestTemplate.Header("x-affinity-leg-auth", "v1.1700000000.abc.def")),
        new RequestTemplate(HttpMethod.POST, "/v1/completions", "w:2", headers, json,
            () -> new RequestTemplate.Header("x-affinity-leg-auth", "v1.1700000000.abc.def")));
    for (int hint : new int[] {0, 3, 1 << 16}) {  // a body written into the write's buffer: under, over its hint
      RequestTemplate.BodyWriter writer = writing(json, hint);
      cases = new java.util.ArrayList<>(cases);
      cases.add(new RequestTemplate(HttpMethod.POST, "/v1/completions", "worker.example:8001", headers, writer));
      cases.add(new RequestTemplate(HttpMethod.POST, "/bé/v1/chat", "w:2", List.of(), writer));
    }
    byte[] large = new byte[3 << 20];  // a leg's size: the buffer grows past its hint
    java.util.Arrays.fill(large, (byte) 'x');
    cases.add(new RequestTemplate(HttpMethod.POST, "/v1/chat/completions", "w:2", headers,
        new RequestTemplate.BodyWriter() {
          @Override
          public void writeTo(java.io.OutputStream out) throws java.io.IOException {
            out.write(large, 0, 1000);
            out.write(large, 1000, large.length - 1000);
          }

          @Override
          public int sizeHint() {
            return 1 << 20;
          }
        }));
    for (int hint : new int[] {(1 << 20) + 1, 2 << 20, 4 << 20}) {  // from the large pool: under and over its hint
      cases.add(new RequestTemplate(HttpMethod.POST, "/v1/chat/completions", "w:2", headers, writing(large, hint)));
    }
    cases.add(new RequestTemplate(HttpMethod.POST, "/v1/completions", "w:2", headers, large));  // an array as large
    for (int hint : new int[] {100, 3 << 20}) {  // kept pieces spliced, long and short, first and last, between writes
      cases.add(new RequestTemplate(HttpMethod.POST, "/v1/chat/completions", "w:2", headers, spliced(hint, true)));
      cases.add(new RequestTemplate(HttpMethod.POST, "/v1/chat/completions", "w:2", headers, spliced(hint, false)));
    }
    long pooled = LargeBuffers.activeBuffers();
    for (RequestTemplate t : cases) {
      String expected = netty(t);
      assertEquals(expected, encoded(t));
      ByteBuf direct = t.encode(ByteBufAllocator.DEFAULT);
      assertEquals(expected.length(), direct.readableBytes());
      assertEquals(expected, new String(ByteBufUtil.getBytes(direct), StandardCharsets.ISO_8859_1));
      direct.release();
    }
    assertEquals(pooled, LargeBuffers.activeBuffers(), "every large buffer back in its pool");
  }

  /** A writer of {@code body} in one write, with that size hint. */
  private static RequestTemplate.BodyWriter writing(byte[] body, int hint) {
    return new RequestTemplate.BodyWriter() {
      @Override
      public void writeTo(java.io.OutputStream out) throws java.io.IOException {
        out.write(body);
      }

      @Override
      public int sizeHint() {
        return hint;
      }
    };
  }

  /**
   * A writer that splices pieces of kept JSON where its stream takes them ({@link dev.affinity.protocol.JsonSplice})
   * and copies the same bytes elsewhere: long pieces (spliced) and a short one (copied), with writes between them, or
   * a long piece first and last.
   */
  private static RequestTemplate.BodyWriter spliced(int hint, boolean between) {
    java.util.Random r = new java.util.Random(hint);
    java.util.List<Object> parts = new java.util.ArrayList<>();
    for (int size : between ? new int[] {-5, 40_000, -100, 300, -1, 70_000, -9} : new int[] {20_000, -3, 16_384}) {
      byte[] b = new byte[Math.abs(size)];
      for (int i = 0; i < b.length; i++) {
        b[i] = (byte) ('a' + r.nextInt(26));
      }
      if (size < 0) {
        parts.add(b);  // written
      } else {
        java.nio.ByteBuffer piece = java.nio.ByteBuffer.allocateDirect(b.length).put(b).flip();
        parts.add(piece.asReadOnlyBuffer());
      }
    }
    return new RequestTemplate.BodyWriter() {
      @Override
      public void writeTo(java.io.OutputStream out) throws java.io.IOException {
        for (Object p : parts) {
          if (p instanceof byte[] b) {
            out.write(b);
          } else if (out instanceof dev.affinity.protocol.JsonSplice s) {
            s.splice(((java.nio.ByteBuffer) p).duplicate());
          } else {
            java.nio.ByteBuffer piece = ((java.nio.ByteBuffer) p).duplicate();
            byte[] b = new byte[piece.remaining()];
            piece.get(b);
            out.write(b);
          }
        }
      }

      @Override
      public int sizeHint() {
        return hint;
      }
    };
  }

  /**
   * Long pieces are not copied: the request is the head's buffer, the pieces and the writes between them, all direct
   * (a socket writes them as they lie, without a copy into one buffer first); a short body stays one buffer.
   */
  @Test
  void longPiecesAreWrittenAsTheyLie() {
    RequestTemplate t = new RequestTemplate(HttpMethod.POST, "/v1/chat/completions", "w:2", List.of(),
        spliced(100, true));
    ByteBuf b = t.encode(ByteBufAllocator.DEFAULT);
    try {
      assertEquals(true, b instanceof io.netty.buffer.CompositeByteBuf, b.getClass().getName());
      assertEquals(5, ((io.netty.buffer.CompositeByteBuf) b).numComponents(), "head and writes, piece, writes, piece, writes");
      assertEquals(true, b.isDirect());
    } finally {
      b.release();
    }
    ByteBuf small = new RequestTemplate(HttpMethod.POST, "/v1/completions", "w:2", List.of(), "{}".getBytes())
        .encode(ByteBufAllocator.DEFAULT);
    assertEquals(false, small instanceof io.netty.buffer.CompositeByteBuf);
    small.release();
  }

  /** A body above the channel allocator's pooled size comes from the large pool, which keeps it for the next. */
  @Test
  void aLargeBodyComesFromThePool() {
    long before = LargeBuffers.activeBuffers();
    ByteBuf small = LargeBuffers.buffer(ByteBufAllocator.DEFAULT, LargeBuffers.ADAPTIVE_MAX);
    ByteBuf large = LargeBuffers.buffer(ByteBufAllocator.DEFAULT, LargeBuffers.ADAPTIVE_MAX + 1);
    assertEquals(before + 1, LargeBuffers.activeBuffers(), "only the large one");
    assertEquals(true, large.isDirect());
    large.release();
    small.release();
    assertEquals(before, LargeBuffers.activeBuffers());
  }
}
