package dev.affinity.server.worker;

import dev.affinity.protocol.ProtocolException;
import io.netty.buffer.ByteBuf;
import io.netty.util.ByteProcessor;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Splits a worker's server-sent events into {@code data:} events, from body pieces as they arrive, and
 * hands each out as one SSE event {@code data: <payload>\n\n} (the bytes a client of the same format gets).
 * Follows the SSE rules trtllm-serve relies on: lines end at CR, LF or CRLF (also when a CRLF is split
 * between two pieces); an event ends at a blank line; several {@code data:} lines join with a newline; one
 * space after the colon is dropped; comments ({@code :...}) and other fields ({@code id:}, {@code retry:})
 * are ignored; events whose {@code event:} type is not {@code message} are skipped; {@code data: [DONE]}
 * ends the stream. Not thread-safe (one per exchange, on its loop).
 */
final class SseDecoder {
  /** Where the events go. */
  interface Events {
    /**
     * One data event, {@code data: <payload>\n\n}: a new array, handed over. Returns false to stop
     * decoding (the exchange has ended).
     */
    boolean event(byte[] sseEvent);

    /** {@code data: [DONE]}: nothing after it is decoded. */
    void done();
  }

  /** The longest line or event accepted (a bound on what one stream may buffer). */
  static final int MAX_EVENT_BYTES = 16 << 20;
  private static final byte[] DATA = "data: ".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] DONE = "[DONE]".getBytes(StandardCharsets.US_ASCII);

  private final Events events;
  /** The line read so far (it may span pieces). */
  private byte[] line = new byte[256];
  private int lineLength;
  /** The previous piece ended with CR: an LF opening this one belongs to it. */
  private boolean skipLf;
  /** {@code data: } and the event's data lines joined by LF. */
  private byte[] event = Arrays.copyOf(DATA, 512);
  private int eventLength = DATA.length;
  private int dataLines;
  private String eventType;
  private boolean stopped;

  SseDecoder(Events events) {
    this.events = events;
  }

  /** Whether {@code [DONE]} came or a listener stopped decoding. */
  boolean stopped() {
    return stopped;
  }

  /**
   * Decodes a piece of the body (its reader index is left alone).
   *
   * @throws ProtocolException (502) for a line or event over {@link #MAX_EVENT_BYTES}
   */
  void feed(ByteBuf in) {
    int i = in.readerIndex();
    int end = in.writerIndex();
    if (skipLf && i < end && in.getByte(i) == '\n') {
      i++;
    }
    skipLf = false;
    while (i < end && !stopped) {
      int t = in.forEachByte(i, end - i, ByteProcessor.FIND_CRLF);
      if (t < 0) {
        append(in, i, end - i);
        return;
      }
      append(in, i, t - i);
      i = t + 1;
      if (in.getByte(t) == '\r') {
        if (i < end) {
          if (in.getByte(i) == '\n') {
            i++;
          }
        } else {
          skipLf = true;
        }
      }
      line();
    }
  }

  /** The body ended: a last event without its blank line still counts. */
  void finish() {
    if (!stopped && lineLength > 0) {
      line();
    }
    if (!stopped && dataLines > 0) {
      dispatch();
    }
  }

  private void append(ByteBuf in, int from, int n) {
    if (n == 0) {
      return;
    }
    if (lineLength + n > MAX_EVENT_BYTES) {
      throw tooLarge();
    }
    if (lineLength + n > line.length) {
      line = Arrays.copyOf(line, Math.max(line.length * 2, lineLength + n));
    }
    in.getBytes(from, line, lineLength, n);
    lineLength += n;
  }

  private void line() {
    int n = lineLength;
    lineLength = 0;
    byte[] l = line;
    if (n == 0) {
      if (dataLines > 0) {
        dispatch();
      }
      eventType = null;
      return;
    }
    if (l[0] == ':') {
      return; // a comment (keep-alive)
    }
    int colon = indexOf(l, n, (byte) ':');
    int fieldEnd = colon < 0 ? n : colon;
    int value = colon < 0 ? n : colon + 1;
    if (value < n && l[value] == ' ') {
      value++;
    }
    if (is(l, fieldEnd, "data")) {
      addData(l, value, n - value);
    } else if (is(l, fieldEnd, "event")) {
      eventType = new String(l, value, n - value, StandardCharsets.UTF_8);
    }
  }

  private void addData(byte[] l, int from, int n) {
    int needed = eventLength + (dataLines > 0 ? 1 : 0) + n;
    if (needed > MAX_EVENT_BYTES) {
      throw tooLarge();
    }
    if (needed + 2 > event.length) {
      event = Arrays.copyOf(event, Math.max(event.length * 2, needed + 2));
    }
    if (dataLines > 0) {
      event[eventLength++] = '\n';
    }
    System.arraycopy(l, from, event, eventLength, n);
    eventLength += n;
    dataLines++;
  }

  private void dispatch() {
    int length = eventLength;
    String type = eventType;
    eventLength = DATA.length;
    dataLines = 0;
    eventType = null;
    if (type != null && !type.isEmpty() && !type.equals("message")) {
      return;
    }
    if (isDone(event, DATA.length, length)) {
      stopped = true;
      events.done();
      return;
    }
    byte[] framed = Arrays.copyOf(event, length + 2);
    framed[length] = '\n';
    framed[length + 1] = '\n';
    if (!events.event(framed)) {
      stopped = true;
    }
  }

  /** Whether the payload is {@code [DONE]}, give or take surrounding whitespace. */
  private static boolean isDone(byte[] b, int from, int to) {
    while (from < to && isSpace(b[from])) {
      from++;
    }
    while (to > from && isSpace(b[to - 1])) {
      to--;
    }
    return Arrays.equals(b, from, to, DONE, 0, DONE.length);
  }

  private static boolean isSpace(byte c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
  }

  private static int indexOf(byte[] b, int n, byte c) {
    for (int i = 0; i < n; i++) {
      if (b[i] == c) {
        return i;
      }
    }
    return -1;
  }

  private static boolean is(byte[] b, int n, String field) {
    if (n != field.length()) {
      return false;
    }
    for (int i = 0; i < n; i++) {
      if (b[i] != field.charAt(i)) {
        return false;
      }
    }
    return true;
  }

  private static ProtocolException tooLarge() {
    return ProtocolException.of(ProtocolException.BAD_GATEWAY,
        "a server-sent event is larger than " + MAX_EVENT_BYTES + " bytes", null);
  }
}
