package dev.affinity.nativebridge.peer;

import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.Name;
import org.bytedeco.javacpp.annotation.Namespace;
import org.bytedeco.javacpp.annotation.Properties;

/**
 * Peer of {@code affinity::ResponseBatch}. A whole batch crosses in a few copies: copyLongs writes
 * {@link #LONG_STRIDE} numbers per response in the order of the constants below.
 */
@Properties(inherit = AffinityNative.class)
@Namespace("affinity")
@Name("ResponseBatch")
public class ResponseBatchPeer extends Pointer {
  public static final int REQUEST_ID = 0;
  public static final int CLIENT_REQUEST_ID = 1;
  public static final int FINISH_REASON = 2;
  public static final int IS_FINAL = 3;
  public static final int TOKEN_OFFSET = 4;
  public static final int TOKEN_COUNT = 5;
  public static final int HAS_CONTEXT_PHASE = 6;
  public static final int CTX_REQUEST_ID = 7;
  public static final int CTX_DP_RANK = 8;
  public static final int FIRST_GEN_OFFSET = 9;
  public static final int FIRST_GEN_COUNT = 10;
  public static final int ARRIVAL_US = 11;
  public static final int SCHEDULED_US = 12;
  public static final int FIRST_TOKEN_US = 13;
  public static final int FINISH_US = 14;
  public static final int PROMPT_TOKENS = 15;
  public static final int REUSED_TOKENS = 16;
  public static final int RANK = 17;
  public static final int OUTPUT_TOKENS = 18;
  public static final int TRANSFER_US = 19;
  public static final int ERROR_KIND = 20;
  public static final int RANK_SOURCE = 21;
  public static final int LONG_STRIDE = 22;

  public ResponseBatchPeer() {
    allocate();
  }

  private native void allocate();

  public native int size();

  public native void clear();

  public native int totalTokens();

  public native int totalFirstGenTokens();

  public native void copyLongs(@Cast("int64_t*") LongPointer out);

  public native void copyTokens(@Cast("int32_t*") IntPointer out);

  public native void copyFirstGenTokens(@Cast("int32_t*") IntPointer out);

  public native int errorMessageSize(int i);

  public native void copyErrorMessage(int i, @Cast("char*") byte[] out);

  public native int opaqueStateSize(int i);

  public native void copyOpaqueState(int i, @Cast("char*") byte[] out);
}
