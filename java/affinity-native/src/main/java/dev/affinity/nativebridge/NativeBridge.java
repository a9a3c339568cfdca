package dev.affinity.nativebridge;

import dev.affinity.nativebridge.peer.AffinityNative;
import java.nio.charset.StandardCharsets;
import org.bytedeco.javacpp.BytePointer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether the native library loaded, probed once (the pattern of Netty's {@code Epoll}): the first
 * touch of a missing JNI library throws {@link UnsatisfiedLinkError} and every later touch
 * {@link NoClassDefFoundError}, so the probe catches {@link LinkageError} once and keeps the cause.
 * {@code -Daffinity.native.disable=true} is a kill switch (the CPU path then reports unavailable).
 */
public final class NativeBridge {
  private static final Logger log = LoggerFactory.getLogger(NativeBridge.class);
  private static final Throwable UNAVAILABILITY_CAUSE;
  private static final String VERSION;
  private static final String BACKENDS;

  static {
    Throwable cause = null;
    String version = null;
    String backends = null;
    if (Boolean.getBoolean("affinity.native.disable")) {
      cause = new UnsupportedOperationException("native library disabled by -Daffinity.native.disable=true");
    } else {
      try {
        AffinityNative.load();
        version = utf8(AffinityNative.nativeVersion());
        backends = utf8(AffinityNative.availableBackends());
      } catch (LinkageError | RuntimeException e) {
        cause = e;
      }
    }
    UNAVAILABILITY_CAUSE = cause;
    VERSION = version;
    BACKENDS = backends;
    if (cause != null) {
      log.debug("native library unavailable", cause);
    }
  }

  private NativeBridge() {}

  public static boolean isAvailable() {
    return UNAVAILABILITY_CAUSE == null;
  }

  /** Throws {@link UnsatisfiedLinkError} (with the original cause) when the library did not load. */
  public static void ensureAvailability() {
    if (UNAVAILABILITY_CAUSE != null) {
      UnsatisfiedLinkError e = new UnsatisfiedLinkError("affinity native library unavailable: " + UNAVAILABILITY_CAUSE);
      e.initCause(UNAVAILABILITY_CAUSE);
      throw e;
    }
  }

  /** Why the library is unavailable, or null. */
  public static Throwable unavailabilityCause() {
    return UNAVAILABILITY_CAUSE;
  }

  /** The native facade's version, e.g. "affinity-native 0.1.0". */
  public static String version() {
    ensureAvailability();
    return VERSION;
  }

  /** Backends compiled into the library, comma-separated (e.g. "sim"). */
  public static String availableBackends() {
    ensureAvailability();
    return BACKENDS;
  }

  /** Live native facade objects (executors, hand-off domains, batches, stats peers); for leak checks. */
  public static long liveObjectCount() {
    ensureAvailability();
    return AffinityNative.liveObjectCount();
  }

  static String utf8(BytePointer p) {
    if (p == null || p.isNull()) {
      return "";
    }
    try (p) {
      return p.getString(StandardCharsets.UTF_8);
    }
  }
}
