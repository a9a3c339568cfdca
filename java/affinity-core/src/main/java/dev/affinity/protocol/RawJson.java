package dev.affinity.protocol;

import com.fasterxml.jackson.core.SerializableString;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * A JSON value already written, as UTF-8, handed to {@link com.fasterxml.jackson.core.JsonGenerator#writeRawValue}
 * so that a UTF-8 generator copies its bytes as they are: what is written once per request and copied into each of
 * its leg bodies ({@link TokenIds}, {@link Messages}). Its "quoted" forms are the text itself (a value, not a string
 * to quote).
 */
final class RawJson implements SerializableString {
  private final byte[] bytes;

  RawJson(byte[] bytes) {
    this.bytes = bytes;
  }

  /** The JSON's bytes (not copied). */
  byte[] bytes() {
    return bytes;
  }

  @Override
  public String getValue() {
    return new String(bytes, StandardCharsets.UTF_8);
  }

  @Override
  public int charLength() {
    return getValue().length();
  }

  @Override
  public char[] asQuotedChars() {
    return getValue().toCharArray();
  }

  @Override
  public byte[] asUnquotedUTF8() {
    return bytes;
  }

  @Override
  public byte[] asQuotedUTF8() {
    return bytes;
  }

  @Override
  public int appendQuotedUTF8(byte[] buffer, int offset) {
    return appendUnquotedUTF8(buffer, offset);
  }

  @Override
  public int appendQuoted(char[] buffer, int offset) {
    return appendUnquoted(buffer, offset);
  }

  @Override
  public int appendUnquotedUTF8(byte[] buffer, int offset) {
    if (offset + bytes.length > buffer.length) {
      return -1;
    }
    System.arraycopy(bytes, 0, buffer, offset, bytes.length);
    return bytes.length;
  }

  @Override
  public int appendUnquoted(char[] buffer, int offset) {
    char[] chars = asQuotedChars();
    if (offset + chars.length > buffer.length) {
      return -1;
    }
    System.arraycopy(chars, 0, buffer, offset, chars.length);
    return chars.length;
  }

  @Override
  public int writeQuotedUTF8(OutputStream out) throws IOException {
    return writeUnquotedUTF8(out);
  }

  @Override
  public int writeUnquotedUTF8(OutputStream out) throws IOException {
    out.write(bytes);
    return bytes.length;
  }

  @Override
  public int putQuotedUTF8(ByteBuffer buffer) {
    return putUnquotedUTF8(buffer);
  }

  @Override
  public int putUnquotedUTF8(ByteBuffer buffer) {
    if (buffer.remaining() < bytes.length) {
      return -1;
    }
    buffer.put(bytes);
    return bytes.length;
  }
}
