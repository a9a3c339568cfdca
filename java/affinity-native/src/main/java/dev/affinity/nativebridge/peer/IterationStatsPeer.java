package dev.affinity.nativebridge.peer;

import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.MemberGetter;
import org.bytedeco.javacpp.annotation.Name;
import org.bytedeco.javacpp.annotation.Namespace;
import org.bytedeco.javacpp.annotation.Properties;

/** Peer of {@code affinity::IterationStats} (field getters). */
@Properties(inherit = AffinityNative.class)
@Namespace("affinity")
@Name("IterationStats")
public class IterationStatsPeer extends Pointer {
  public IterationStatsPeer() {
    allocate();
  }

  private native void allocate();

  @MemberGetter public native @Cast("int64_t") long iterations();

  @MemberGetter public native @Cast("int64_t") long lastIterationStartUs();

  @MemberGetter public native @Cast("int64_t") long lastIterationDurationUs();

  @MemberGetter public native int lastContextRequests();

  @MemberGetter public native int lastGenerationRequests();

  @MemberGetter public native @Cast("int64_t") long lastContextTokens();

  @MemberGetter public native int activeRequests();

  @MemberGetter public native int pendingRequests();

  @MemberGetter public native int heldContexts();

  @MemberGetter public native @Cast("int64_t") long completedRequests();

  @MemberGetter public native @Cast("int64_t") long totalPromptTokens();

  @MemberGetter public native @Cast("int64_t") long totalReusedTokens();

  @MemberGetter public native @Cast("int64_t") long totalGeneratedTokens();

  @MemberGetter public native @Cast("int64_t") long busyUs();

  @MemberGetter public native @Cast("int64_t") long rejectedPollItems();
}
