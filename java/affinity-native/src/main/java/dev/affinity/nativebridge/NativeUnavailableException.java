package dev.affinity.nativebridge;

/**
 * Something needs Affinity's native library (an embedded executor, a worker process's CPU executor) and it did not
 * load: a router-only build ({@code -Daffinity.native.skip=true}), a jar without the library for this platform, or
 * {@code -Daffinity.native.disable=true}. The message is one line that names what asked and what is missing; the
 * loader's own error is the cause.
 */
public final class NativeUnavailableException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  NativeUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
