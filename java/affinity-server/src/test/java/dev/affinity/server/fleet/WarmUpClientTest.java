package dev.affinity.server.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpRequestDecoder;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The warm-up client's requests are well-formed HTTP/1.1 in every client's shape, and it reads answers to their end. */
class WarmUpClientTest {
  @Test
  void everyShapeIsAWellFormedPostWithItsBodyAndExtraHeaders() {
    String body = "{\"prompt\": \"hi\"}";
    for (WarmUpClient.Shape shape : WarmUpClient.Shape.values()) {
      String head = shape.head("/v1/completions", "127.0.0.1:9", body.length(),
          List.<String[]>of(new String[] {"X-Session-ID", "s-1"}));
      EmbeddedChannel ch = new EmbeddedChannel(new HttpRequestDecoder(), new HttpObjectAggregator(1 << 16));
      ch.writeInbound(Unpooled.copiedBuffer(head + body, StandardCharsets.US_ASCII));
      FullHttpRequest r = assertInstanceOf(FullHttpRequest.class, ch.readInbound(), shape.name());
      assertEquals("/v1/completions", r.uri(), shape.name());
      assertEquals("127.0.0.1:9", r.headers().get("host"), shape.name());
      assertEquals("s-1", r.headers().get("x-session-id"), shape.name());
      assertEquals(body, r.content().toString(StandardCharsets.UTF_8), shape.name());
      r.release();
      ch.finishAndReleaseAll();
    }
  }

  @Test
  void answersAreReadToTheirEndWhetherSizedOrChunked() throws IOException {
    String two = "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello"
        + "HTTP/1.1 429 Too Many Requests\r\ntransfer-encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nTrailer: t\r\n\r\n"
        + "HTTP/1.1 204 No Content\r\n\r\n";
    ByteArrayInputStream in = new ByteArrayInputStream(two.getBytes(StandardCharsets.US_ASCII));
    assertEquals(200, WarmUpClient.readAnswer(in));
    assertEquals(429, WarmUpClient.readAnswer(in));
    assertEquals(204, WarmUpClient.readAnswer(in));
    assertEquals(-1, in.read(), "nothing left over");
    assertThrows(IOException.class, () -> WarmUpClient.readAnswer(
        new ByteArrayInputStream("HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\nshort".getBytes(StandardCharsets.US_ASCII))));
    assertThrows(IOException.class, () -> WarmUpClient.readAnswer(
        new ByteArrayInputStream("SSH-2.0\r\n\r\n".getBytes(StandardCharsets.US_ASCII))));
  }
}
