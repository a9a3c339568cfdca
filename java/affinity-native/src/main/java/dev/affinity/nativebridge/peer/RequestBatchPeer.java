package dev.affinity.nativebridge.peer;

import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.annotation.ByRef;
import org.bytedeco.javacpp.annotation.Const;
import org.bytedeco.javacpp.annotation.Name;
import org.bytedeco.javacpp.annotation.Namespace;
import org.bytedeco.javacpp.annotation.Properties;

/** Peer of {@code affinity::RequestBatch}. */
@Properties(inherit = AffinityNative.class)
@Namespace("affinity")
@Name("RequestBatch")
public class RequestBatchPeer extends Pointer {
  public RequestBatchPeer() {
    allocate();
  }

  private native void allocate();

  public native void add(@Const @ByRef RequestSpecPeer spec);

  public native int size();

  public native void clear();
}
