package dev.affinity.nativebridge.peer;

import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.annotation.Name;
import org.bytedeco.javacpp.annotation.Namespace;
import org.bytedeco.javacpp.annotation.Properties;

/** Peer of {@code affinity::HandoffDomain} ({@code affinity/handoff.h}); freed with {@link #close()}. */
@Properties(inherit = AffinityNative.class)
@Namespace("affinity")
@Name("HandoffDomain")
public class HandoffDomainPeer extends Pointer {
  public HandoffDomainPeer() {
    allocate();
  }

  private native void allocate();

  /** Executors of the domain alive now. */
  public native int executorCount();
}
