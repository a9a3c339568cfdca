package dev.affinity.nativebridge;

import java.util.Objects;
import java.util.function.Supplier;
import org.bytedeco.javacpp.Loader;

/**
 * The guard in front of everything that needs the native library: {@link #require} throws a
 * {@link NativeUnavailableException} with one line naming what asked for it and what is missing, instead of the
 * loader's {@link UnsatisfiedLinkError}. Nothing is loaded until the probe is asked: a frontend in front of remote
 * workers never touches the library. {@link #system()} probes {@link NativeBridge}; {@link #probing} takes another
 * probe (tests simulate an absent library with it).
 */
public final class NativeRequirement {
  /** The shared library JavaCPP loads first (the JNI glue, which links libaffinity_native.so). */
  public static final String LIBRARY = "libjniAffinityNative.so";

  private static final NativeRequirement SYSTEM = new NativeRequirement(NativeBridge::unavailabilityCause);

  private final Supplier<Throwable> unavailability;

  private NativeRequirement(Supplier<Throwable> unavailability) {
    this.unavailability = unavailability;
  }

  /** The real library, probed once ({@link NativeBridge}) on the first question. */
  public static NativeRequirement system() {
    return SYSTEM;
  }

  /** A requirement on another probe: it returns why the library is unavailable, or null when it is available. */
  public static NativeRequirement probing(Supplier<Throwable> unavailability) {
    return new NativeRequirement(Objects.requireNonNull(unavailability, "unavailability"));
  }

  public boolean isAvailable() {
    return unavailability.get() == null;
  }

  /**
   * Returns when the library is available; otherwise throws with {@code what} (e.g. "context_servers (embedded
   * workers, backend sim)") at the head of the message.
   */
  public void require(String what) {
    Throwable cause = unavailability.get();
    if (cause != null) {
      throw new NativeUnavailableException(what + ": needs Affinity's native library, which is not available: "
          + reason(cause), cause);
    }
  }

  /** One line: what is missing, from the loader's error. */
  static String reason(Throwable cause) {
    if (cause instanceof UnsupportedOperationException) {
      return firstLine(cause.getMessage());  // the kill switch says so itself
    }
    String message = cause.getMessage() == null ? "" : cause.getMessage();
    if (cause instanceof UnsatisfiedLinkError && message.startsWith("no jniAffinityNative")) {
      return LIBRARY + " for " + platform() + " is not on the classpath (not in the affinity-native jar: a router-only"
          + " build, -Daffinity.native.skip=true, or another platform's); serve remote workers (urls) or use a build"
          + " with the native layer";
    }
    return cause.getClass().getSimpleName() + ": " + firstLine(message);
  }

  private static String platform() {
    try {
      return Loader.getPlatform();
    } catch (LinkageError | RuntimeException e) {
      return System.getProperty("os.name") + "-" + System.getProperty("os.arch");
    }
  }

  private static String firstLine(String s) {
    if (s == null) {
      return "";
    }
    int nl = s.indexOf('\n');
    return nl < 0 ? s : s.substring(0, nl);
  }
}
