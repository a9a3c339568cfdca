package dev.affinity.nativebridge.peer;

import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.Name;
import org.bytedeco.javacpp.annotation.Namespace;
import org.bytedeco.javacpp.annotation.Properties;

/** Peer of {@code affinity::KvEventBatch}; packed like {@link ResponseBatchPeer}. */
@Properties(inherit = AffinityNative.class)
@Namespace("affinity")
@Name("KvEventBatch")
public class KvEventBatchPeer extends Pointer {
  public static final int EVENT_ID = 0;
  public static final int TYPE = 1;
  public static final int RANK = 2;
  public static final int WINDOW_SIZE = 3;
  public static final int HAS_PARENT = 4;
  public static final int PARENT_HASH = 5;
  public static final int HASH_OFFSET = 6;
  public static final int HASH_COUNT = 7;
  public static final int TOKEN_OFFSET = 8;
  public static final int TOKEN_COUNT = 9;
  public static final int VALUE = 10;
  public static final int CACHE_LEVEL = 11;
  public static final int LONG_STRIDE = 12;

  public KvEventBatchPeer() {
    allocate();
  }

  private native void allocate();

  public native int size();

  public native void clear();

  public native int totalHashes();

  public native int totalTokens();

  public native void copyLongs(@Cast("int64_t*") LongPointer out);

  public native void copyHashes(@Cast("int64_t*") LongPointer out);

  public native void copyTokens(@Cast("int32_t*") IntPointer out);
}
