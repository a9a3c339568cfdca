package dev.affinity.nativebridge.peer;

import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.Const;
import org.bytedeco.javacpp.annotation.Namespace;
import org.bytedeco.javacpp.annotation.Platform;
import org.bytedeco.javacpp.annotation.StdString;

/**
 * JavaCPP holder of the native facade ({@code native/include/affinity/}): one glue library
 * ({@code libjniAffinityNative.so}) for every peer in this package. The peers are the only classes
 * that touch JavaCPP; everything else goes through {@link dev.affinity.nativebridge.NativeExecutor}.
 * Strings cross as UTF-8 bytes.
 */
@Platform(include = {"affinity/types.h", "affinity/handoff.h", "affinity/executor.h"}, link = "affinity_native")
@Namespace("affinity")
public final class AffinityNative {
  static {
    Loader.load();
  }

  private AffinityNative() {}

  /** Forces the native library to load (the first touch of any peer does the same). */
  public static void load() {
    Loader.load(AffinityNative.class);
  }

  public static native ExecutorPeer createExecutor(@StdString BytePointer backend, @StdString BytePointer configJson);

  /** An executor in a hand-off domain ({@code affinity/handoff.h}); a null domain is none. */
  public static native ExecutorPeer createExecutor(@StdString BytePointer backend, @StdString BytePointer configJson,
      @Const HandoffDomainPeer domain);

  public static native void destroyExecutor(ExecutorPeer executor);

  public static native void checkExecutorConfig(@StdString BytePointer backend, @StdString BytePointer configJson);

  public static native @Cast("int64_t") long liveObjectCount();

  public static native @StdString BytePointer availableBackends();

  public static native @StdString BytePointer nativeVersion();

  /** Stops process-wide backend runtimes (the pytorch backend's Python host); see executor.h. */
  public static native int shutdownBackends(@Cast("int64_t") long timeoutMs);
}
