package dev.affinity.nativebridge.peer;

import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.Const;
import org.bytedeco.javacpp.annotation.Name;
import org.bytedeco.javacpp.annotation.Namespace;
import org.bytedeco.javacpp.annotation.Properties;

/**
 * Peer of {@code affinity::RequestSpec}, the C++ declaration of a request's fields: its setters,
 * token arrays off-heap. {@code dev.affinity.nativebridge.ExecutorMarshaller} is the one place that
 * fills it from an {@code ExecutorRequest}.
 */
@Properties(inherit = AffinityNative.class)
@Namespace("affinity")
@Name("RequestSpec")
public class RequestSpecPeer extends Pointer {
  public RequestSpecPeer() {
    allocate();
  }

  private native void allocate();

  public native void setClientRequestId(@Cast("int64_t") long v);

  public native void setMaxNewTokens(int v);

  public native void setRequestType(int v);

  public native void setStreaming(@Cast("bool") boolean v);

  public native void setEndId(int v);

  public native void setSeed(@Cast("int64_t") long v);

  public native void setAdpRankHint(int rank, @Cast("bool") boolean relax);

  public native void setPriority(float v);

  public native void setInputTokens(@Cast("const int32_t*") IntPointer data, int n);

  public native void setStopTokenIds(@Cast("const int32_t*") @Const int[] data, int n);

  public native void setConversationId(@Cast("const char*") @Const byte[] data, int n);

  public native void setSubagentAffinityId(@Cast("const char*") @Const byte[] data, int n);

  public native void setCacheSalt(@Cast("const char*") @Const byte[] data, int n);

  public native void clearCacheSalt();

  public native void setContextPhase(@Cast("int64_t") long ctxRequestId, int ctxDpRank,
      @Cast("const int32_t*") @Const int[] firstGenTokens, int nFirst, @Cast("const char*") @Const byte[] opaqueState,
      int nOpaque);

  public native void addRetentionRange(int tokenStart, int tokenEnd, int priority, @Cast("int64_t") long durationMs);

  public native void setDecodeRetention(int priority, @Cast("int64_t") long durationMs);

  public native void reset();
}
