package dev.affinity.protocol;

import java.nio.ByteBuffer;

/**
 * An output stream that takes pieces of JSON already written as they lie, without copying them: a leg body whose
 * messages and ids are a conversation's kept JSON ({@link JsonRope}) takes their pieces so, and hands them to the
 * socket, which reads them from where they lie.
 */
public interface JsonSplice {
  /**
   * The next bytes of the stream: {@code piece}'s remaining bytes, a direct buffer that is never written again and
   * may be held as long as needed (not copied).
   */
  void splice(ByteBuffer piece);
}
