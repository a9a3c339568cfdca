package dev.affinity.nativebridge.peer;

import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.MemberGetter;
import org.bytedeco.javacpp.annotation.Name;
import org.bytedeco.javacpp.annotation.Namespace;
import org.bytedeco.javacpp.annotation.Properties;

/** Peer of {@code affinity::KvCacheStats} (field getters). */
@Properties(inherit = AffinityNative.class)
@Namespace("affinity")
@Name("KvCacheStats")
public class KvCacheStatsPeer extends Pointer {
  public KvCacheStatsPeer() {
    allocate();
  }

  private native void allocate();

  @MemberGetter public native @Cast("int64_t") long maxNumBlocks();

  @MemberGetter public native @Cast("int64_t") long freeNumBlocks();

  @MemberGetter public native @Cast("int64_t") long usedNumBlocks();

  @MemberGetter public native @Cast("int64_t") long cachedNumBlocks();

  @MemberGetter public native @Cast("int64_t") long tokensPerBlock();

  @MemberGetter public native @Cast("int64_t") long allocTotalBlocks();

  @MemberGetter public native @Cast("int64_t") long allocNewBlocks();

  @MemberGetter public native @Cast("int64_t") long reusedBlocks();

  @MemberGetter public native @Cast("int64_t") long missedBlocks();

  @MemberGetter public native @Cast("int64_t") long evictedBlocks();

  @MemberGetter public native @Cast("int64_t") long activeRequests();

  @MemberGetter public native @Cast("int64_t") long queuedRequests();

  @MemberGetter public native double cacheHitRate();

  @MemberGetter public native @Cast("int64_t") long contextTokensComputed();
}
