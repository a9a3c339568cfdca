package dev.affinity.worker;

import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;

/**
 * One streamed chunk as JSON bytes: what a worker over HTTP sent as one SSE {@code data:} event, relayed
 * to the client without being parsed into objects and serialized again. {@link #parsed()} reads it into an
 * {@link OpenAiStreamChunk} on demand, for consumers that want objects (the default of
 * {@link WorkerListener#onEncodedChunk} and {@link dev.affinity.frontend.ClientSink#streamEncoded}).
 *
 * <p>The bytes are usually held inside an SSE event ({@code data: <json>\n\n}), so that a client that gets
 * the stream as the worker framed it receives the very array ({@link #sseEvent()}). Immutable as far as
 * callers can tell: the array is never handed out except as that event, which must not be modified.
 *
 * <p>{@link #source()} is how a slow client pushes back: the sink pauses the worker connection the chunk
 * came from while its client cannot take more bytes, and resumes it when it can (null: the producer cannot
 * be paused, e.g. an in-process executor).
 */
public final class EncodedChunk {
  private static final byte[] DATA = "data: ".getBytes(StandardCharsets.US_ASCII);

  /** A producer of chunks that can stop for a while. Both methods may be called from any thread, repeatedly. */
  public interface Source {
    /** Stops reading more chunks (what was already read may still arrive). */
    void pause();

    /** Reads again after {@link #pause()}; does nothing when not paused or when the call has ended. */
    void resume();
  }

  /** Encodes the chunks that exist as records ({@link #of(OpenAiStreamChunk)}) when their bytes are first asked for. */
  private static final ProtocolCodec RECORDS = new ProtocolCodec();

  /** The JSON (for a record's chunk: null until first asked for, then its bytes from offset 0). */
  private volatile byte[] buffer;
  private final int offset;
  private volatile int length;
  private final boolean sseFramed;
  private final boolean chat;
  private final ProtocolCodec codec;
  private final Source source;
  private volatile OpenAiStreamChunk parsed;

  private EncodedChunk(byte[] buffer, int offset, int length, boolean sseFramed, boolean chat, ProtocolCodec codec,
      Source source, OpenAiStreamChunk parsed) {
    if (buffer != null) {
      Objects.checkFromIndexSize(offset, length, buffer.length);
    }
    this.buffer = buffer;
    this.offset = offset;
    this.length = length;
    this.sseFramed = sseFramed;
    this.chat = chat;
    this.codec = codec;
    this.source = source;
    this.parsed = parsed;
  }

  /**
   * A chunk inside a complete SSE event: {@code event} is exactly {@code "data: " + json + "\n\n"}; it is
   * kept, not copied, and must not change afterwards.
   *
   * @param chat whether it is a chat completion chunk (how {@link #parsed()} reads it)
   * @param codec parses the chunk when someone asks for the object
   * @param source the connection it came from, or null
   */
  public static EncodedChunk ofSseEvent(byte[] event, boolean chat, ProtocolCodec codec, Source source) {
    int json = event.length - DATA.length - 2;
    if (json < 0 || !Arrays.equals(event, 0, DATA.length, DATA, 0, DATA.length) || event[event.length - 2] != '\n'
        || event[event.length - 1] != '\n') {
      throw new IllegalArgumentException("not a single data: event");
    }
    return new EncodedChunk(event, DATA.length, json, true, chat, Objects.requireNonNull(codec, "codec"), source,
        null);
  }

  /** The JSON of a chunk that exists as an object too: nothing to parse later. */
  public static EncodedChunk of(OpenAiStreamChunk chunk, byte[] json) {
    Objects.requireNonNull(chunk, "chunk");
    return new EncodedChunk(json, 0, json.length, false, false, null, null, chunk);
  }

  /**
   * A chunk that exists as an object (an in-process worker's, or one a resumed stream rewrote): its JSON is written
   * when a sink first asks for the bytes, never for a sink that reads the object ({@link #parsed()}).
   */
  public static EncodedChunk of(OpenAiStreamChunk chunk) {
    return new EncodedChunk(null, 0, 0, false, false, null, null, Objects.requireNonNull(chunk, "chunk"));
  }

  /** The JSON bytes, written now for a record's chunk that has none yet. */
  private byte[] buffer() {
    byte[] b = buffer;
    if (b == null) {
      b = RECORDS.toJsonBytes(parsed);
      length = b.length;
      buffer = b;
    }
    return b;
  }

  /** The JSON's length in bytes. */
  public int length() {
    buffer();
    return length;
  }

  /** A copy of the JSON bytes. */
  public byte[] json() {
    byte[] b = buffer();
    return Arrays.copyOfRange(b, offset, offset + length);
  }

  /** The JSON as text (for logs and tests). */
  public String jsonText() {
    byte[] b = buffer();
    return new String(b, offset, length, StandardCharsets.UTF_8);
  }

  /**
   * The chunk as one SSE event, {@code data: <json>\n\n}: the worker's own array when it came framed that
   * way (do not modify it), else a new one.
   */
  public byte[] sseEvent() {
    byte[] b = buffer();
    return sseFramed ? b : dataEvent(b, offset, length);
  }

  /** {@code data: <json>\n\n} for the {@code length} bytes of JSON at {@code offset}: one SSE event, in a new array. */
  public static byte[] dataEvent(byte[] json, int offset, int length) {
    byte[] event = new byte[DATA.length + length + 2];
    System.arraycopy(DATA, 0, event, 0, DATA.length);
    System.arraycopy(json, offset, event, DATA.length, length);
    event[event.length - 2] = '\n';
    event[event.length - 1] = '\n';
    return event;
  }

  /**
   * The chunk as an object, parsed on first use.
   *
   * @throws ProtocolException (502) when the bytes are not a chunk of the expected shape
   */
  public OpenAiStreamChunk parsed() {
    OpenAiStreamChunk p = parsed;
    if (p == null) {
      byte[] json = json();
      p = chat ? codec.parseChatCompletionStreamChunk(json) : codec.parseCompletionStreamChunk(json);
      parsed = p;
    }
    return p;
  }

  /** The chunk as a record when it already is one (made from one, or parsed before), else null: nothing is parsed. */
  public OpenAiStreamChunk record() {
    return parsed;
  }

  /** What to pause while the client cannot keep up; null when the producer cannot be paused. */
  public Source source() {
    return source;
  }

  @Override
  public String toString() {
    return "EncodedChunk[" + jsonText() + "]";
  }
}
