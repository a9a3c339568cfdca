package dev.affinity.disagg;

/** Finding a byte sequence in a worker's JSON bytes without parsing them (a chunk's {@code tool_calls}, its choices). */
final class ByteSearch {
  private ByteSearch() {}

  /** The first index at or after {@code from} where {@code needle} starts in {@code hay}, or -1. */
  static int indexOf(byte[] hay, byte[] needle, int from) {
    outer:
    for (int i = from; i + needle.length <= hay.length; i++) {
      for (int k = 0; k < needle.length; k++) {
        if (hay[i + k] != needle[k]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }
}
