package dev.affinity.nativebridge.peer;

import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.annotation.ByRef;
import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.Const;
import org.bytedeco.javacpp.annotation.Name;
import org.bytedeco.javacpp.annotation.Namespace;
import org.bytedeco.javacpp.annotation.Properties;
import org.bytedeco.javacpp.annotation.StdString;

/** Peer of {@code affinity::Executor}. Created by {@link AffinityNative#createExecutor}, freed by destroyExecutor. */
@Properties(inherit = AffinityNative.class)
@Namespace("affinity")
@Name("Executor")
public class ExecutorPeer extends Pointer {
  public ExecutorPeer(Pointer p) {
    super(p);
  }

  public native @Cast("int64_t") long enqueue(@Const @ByRef RequestSpecPeer spec);

  public native void enqueueBatch(@Const @ByRef RequestBatchPeer batch, @Cast("int64_t*") LongPointer idsOut);

  /** Blocks in native code (never a critical region); returns the number of responses moved into out. */
  public native int awaitResponses(@ByRef ResponseBatchPeer out, int maxResponses, @Cast("int64_t") long timeoutUs);

  public native void cancel(@Cast("int64_t") long requestId);

  /** executor.h: the conversation's retained turns become evictable first (a no-op for unknown ids). */
  public native void endConversation(@StdString BytePointer conversationId);

  public native int drainKvEvents(@ByRef KvEventBatchPeer out, int maxEvents);

  public native void getIterationStats(@ByRef IterationStatsPeer out);

  public native void getKvCacheStats(int rank, @ByRef KvCacheStatsPeer out);

  public native int numRanks();

  public native int tokensPerBlock();

  public native @StdString BytePointer describe();

  /** The model's tokenizer (executor.h): writes up to capacity ids, returns the full count. */
  public native int tokenize(@StdString BytePointer text, int mode, @Cast("int32_t*") IntPointer out, int capacity);

  public native @StdString BytePointer detokenize(@Cast("const int32_t*") IntPointer tokens, int n);

  public native int clockMode();

  public native @Cast("int64_t") long nowUs();

  public native void advanceTo(@Cast("int64_t") long timeUs);

  public native @Cast("int64_t") long nextIterationEndUs();

  public native void shutdown();

  public native @Cast("bool") boolean isShutdown();
}
