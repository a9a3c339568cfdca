package dev.affinity.server.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.protocol.ProtocolException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The SSE splitting of worker streams, fed in every possible pair of pieces. */
class SseDecoderTest {

  /** What a decoder handed out: each event as text, and "[DONE]" for the end. */
  static final class Recorder implements SseDecoder.Events {
    final List<String> events = new ArrayList<>();
    boolean stopAfterFirst;

    @Override
    public boolean event(byte[] sseEvent) {
      events.add(new String(sseEvent, StandardCharsets.UTF_8));
      return !stopAfterFirst;
    }

    @Override
    public void done() {
      events.add("[DONE]");
    }
  }

  /** Decodes {@code stream} split at every position into two pieces; all splits must agree. */
  static List<String> decodeEverySplit(String stream) {
    byte[] bytes = stream.getBytes(StandardCharsets.UTF_8);
    List<String> first = null;
    for (int cut = 0; cut <= bytes.length; cut++) {
      Recorder r = new Recorder();
      SseDecoder d = new SseDecoder(r);
      feed(d, bytes, 0, cut);
      feed(d, bytes, cut, bytes.length);
      d.finish();
      if (first == null) {
        first = r.events;
      } else {
        assertEquals(first, r.events, "split at " + cut);
      }
    }
    return first;
  }

  static void feed(SseDecoder d, byte[] b, int from, int to) {
    ByteBuf piece = Unpooled.wrappedBuffer(b, from, to - from);
    try {
      d.feed(piece);
    } finally {
      piece.release();
    }
  }

  @Test
  void eventsComeOutFramedAsDataLinesEvenWhenSplitAnywhere() {
    assertEquals(List.of("data: {\"a\":1}\n\n", "data: {\"b\":2}\n\n", "[DONE]"),
        decodeEverySplit("data: {\"a\":1}\n\ndata:{\"b\":2}\n\ndata: [DONE]\n\n"));
  }

  @Test
  void crlfAndCrLineEndsCountOnceEachAlsoWhenTheCrlfIsSplit() {
    assertEquals(List.of("data: x\n\n", "data: y\n\n", "data: z\n\n"),
        decodeEverySplit("data: x\r\n\r\ndata: y\r\rdata: z\n\n"));
  }

  @Test
  void commentsOtherFieldsAndForeignEventTypesAreSkipped() {
    assertEquals(List.of("data: kept\n\n", "data: typed as message\n\n"),
        decodeEverySplit(": keep-alive\n\nid: 7\nretry: 10\ndata: kept\n\nevent: perf_metrics\ndata: {\"x\":1}\n\n"
            + "event: message\ndata: typed as message\n\n"));
  }

  @Test
  void severalDataLinesJoinWithANewlineAndOneLeadingSpaceIsDropped() {
    assertEquals(List.of("data: one\n two\nthree\n\n"), decodeEverySplit("data: one\ndata:  two\ndata:three\n\n"));
  }

  @Test
  void theLastEventWithoutItsBlankLineStillCountsAtTheEnd() {
    assertEquals(List.of("data: a\n\n", "data: tail\n\n"), decodeEverySplit("data: a\n\ndata: tail"));
  }

  @Test
  void nothingAfterDoneAndAListenerCanStop() {
    assertEquals(List.of("[DONE]"), decodeEverySplit("data:  [DONE] \n\ndata: late\n\n"));
    Recorder r = new Recorder();
    r.stopAfterFirst = true;
    SseDecoder d = new SseDecoder(r);
    byte[] b = "data: 1\n\ndata: 2\n\n".getBytes(StandardCharsets.UTF_8);
    feed(d, b, 0, b.length);
    assertTrue(d.stopped());
    assertEquals(List.of("data: 1\n\n"), r.events);
  }

  @Test
  void anEventPastTheLimitIsAProtocolError() {
    SseDecoder d = new SseDecoder(new Recorder());
    byte[] big = new byte[SseDecoder.MAX_EVENT_BYTES / 2];
    java.util.Arrays.fill(big, (byte) 'x');
    feed(d, "data: ".getBytes(StandardCharsets.UTF_8), 0, 6);
    feed(d, big, 0, big.length);
    feed(d, "\n".getBytes(StandardCharsets.UTF_8), 0, 1);
    feed(d, "data: ".getBytes(StandardCharsets.UTF_8), 0, 6);
    ProtocolException e = assertThrows(ProtocolException.class, () -> {
      feed(d, big, 0, big.length);
      feed(d, "\n".getBytes(StandardCharsets.UTF_8), 0, 1);
    });
    assertEquals(502, e.status());
    assertFalse(d.stopped());
  }

  @Test
  void theScannerAcceptsOneObjectAndFlagsWhatTheReportNeeds() {
    assertFalse(scan("{\"id\":\"c\",\"choices\":[{\"text\":\"a\",\"finish_reason\":null}],\"usage\":null}"));
    assertTrue(scan("{\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":4}}"));
    assertTrue(scan("{\"choices\":[{\"disaggregated_params\":{\"ctx_dp_rank\":1}}]}"));
    assertFalse(scan("{\"x\":{\"usage\":{\"prompt_tokens\":4}}}"), "only a top-level usage");
    for (String bad : List.of("{broken", "[1]", "{\"a\":1} {\"b\":2}", "{\"a\":1", "")) {
      assertThrows(ProtocolException.class, () -> scan(bad), bad);
    }
  }

  private static boolean scan(String json) {
    byte[] b = ("data: " + json + "\n\n").getBytes(StandardCharsets.UTF_8);
    return ChunkScanner.scan(b, 6, b.length - 8);
  }
}
