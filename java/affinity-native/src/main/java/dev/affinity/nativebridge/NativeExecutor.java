package dev.affinity.nativebridge;

import dev.affinity.executor.ClockMode;
import dev.affinity.executor.Executor;
import dev.affinity.executor.ExecutorException;
import dev.affinity.executor.ExecutorRequest;
import dev.affinity.executor.ExecutorResponse;
import dev.affinity.executor.IterationStats;
import dev.affinity.executor.KvCacheStats;
import dev.affinity.executor.KvEvent;
import dev.affinity.nativebridge.peer.AffinityNative;
import dev.affinity.nativebridge.peer.ExecutorPeer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import org.bytedeco.javacpp.BytePointer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An {@link Executor} backed by the native facade through JavaCPP. Three parts: its lifecycle is a
 * {@link NativeResource} (safe to close while other threads call it: {@link #close()} shuts the
 * executor down, which wakes blocked {@link #awaitResponses} calls, waits until every call in flight
 * has returned, and only then frees the native object); values cross the boundary in
 * {@link ExecutorMarshaller} (off-heap token arrays, packed batches, pooled buffers); and what is
 * particular to a backend comes from its {@link ExecutorBackendProvider}, found in
 * {@link ExecutorBackends}. C++ exceptions arrive as {@link ExecutorException} with the native message.
 */
public final class NativeExecutor extends NativeResource implements Executor {
  private static final Logger log = LoggerFactory.getLogger(NativeExecutor.class);

  private final ExecutorPeer peer;
  private final ExecutorBackendProvider backend;
  private final ExecutorMarshaller marshaller = new ExecutorMarshaller();
  private final int numRanks;
  private final int tokensPerBlock;
  private final ClockMode clockMode;

  private NativeExecutor(ExecutorPeer peer, ExecutorBackendProvider backend) {
    this.peer = peer;
    this.backend = backend;
    this.numRanks = peer.numRanks();
    this.tokensPerBlock = peer.tokensPerBlock();
    this.clockMode = ClockMode.fromCode(peer.clockMode());
  }

  /** {@link #create(String, String, HandoffDomain)} without a hand-off domain. */
  public static NativeExecutor create(String backend, String configJson) {
    return create(backend, configJson, null);
  }

  /**
   * Creates an executor of the named backend ({@link ExecutorBackends}: "sim" is the CPU executor,
   * "pytorch" TensorRT-LLM's PyTorch executor in an embedded CPython) from a JSON configuration
   * ("" or "{}" for defaults), in a fleet's hand-off domain (null: none, so it takes over no context
   * held by another executor of this process). Throws {@link ExecutorException} naming an unknown
   * backend or a bad key, {@link IllegalStateException} for a closed domain, {@link NativeUnavailableException}
   * (one line) when the native library is not available.
   */
  public static NativeExecutor create(String backend, String configJson, HandoffDomain handoff) {
    Objects.requireNonNull(backend, "backend");
    NativeRequirement.system().require("the " + backend + " executor");
    ExecutorBackendProvider provider = ExecutorBackends.get(backend);
    String config = provider.prepareCreate(configJson == null ? "" : configJson);
    ExecutorPeer p;
    try (BytePointer b = new BytePointer(backend, StandardCharsets.UTF_8);
        BytePointer c = new BytePointer(config == null ? "" : config, StandardCharsets.UTF_8)) {
      p = handoff == null ? AffinityNative.createExecutor(b, c)
          : handoff.withPeer(domain -> AffinityNative.createExecutor(b, c, domain));
    } catch (IllegalStateException | ExecutorException e) {
      throw e;
    } catch (RuntimeException e) {
      throw new ExecutorException(e.getMessage(), e);
    }
    if (p == null || p.isNull()) {
      throw new ExecutorException("native createExecutor returned no executor for backend \"" + backend + "\"");
    }
    NativeExecutor ex = new NativeExecutor(p, provider);
    provider.opened();
    log.debug("created {} executor: {} ranks, {} tokens per block, {} clock{}", backend, ex.numRanks,
        ex.tokensPerBlock, ex.clockMode, handoff == null ? "" : ", in a hand-off domain");
    return ex;
  }

  /**
   * Validates a configuration's keys as {@link #create} would, without creating anything: no thread,
   * no Python interpreter is run or loaded, no model. Throws {@link ExecutorException} naming the bad key.
   */
  public static void checkConfig(String backend, String configJson) {
    Objects.requireNonNull(backend, "backend");
    NativeRequirement.system().require("checking the " + backend + " executor's settings");
    String config = ExecutorBackends.get(backend).prepareCheck(configJson == null ? "" : configJson);
    try (BytePointer b = new BytePointer(backend, StandardCharsets.UTF_8);
        BytePointer c = new BytePointer(config == null ? "" : config, StandardCharsets.UTF_8)) {
      AffinityNative.checkExecutorConfig(b, c);
    } catch (RuntimeException e) {
      throw e instanceof ExecutorException x ? x : new ExecutorException(e.getMessage(), e);
    }
  }

  @Override
  public String backend() {
    return backend.name();
  }

  // ---------------------------------------------------------------------------------------------
  // Requests, responses, events

  @Override
  public long enqueue(ExecutorRequest request) {
    Objects.requireNonNull(request, "request");
    return call(() -> marshaller.enqueue(peer, request));
  }

  @Override
  public long[] enqueueAll(List<ExecutorRequest> requests) {
    Objects.requireNonNull(requests, "requests");
    if (requests.isEmpty()) {
      return new long[0];
    }
    return call(() -> marshaller.enqueueAll(peer, requests));
  }

  @Override
  public void cancel(long requestId) {
    run(() -> peer.cancel(requestId));
  }

  @Override
  public void endConversation(String conversationId) {
    Objects.requireNonNull(conversationId, "conversationId");
    run(() -> {
      try (BytePointer id = new BytePointer(conversationId, StandardCharsets.UTF_8)) {
        peer.endConversation(id);
      }
    });
  }

  @Override
  public List<ExecutorResponse> awaitResponses(int max, Duration timeout) {
    if (max <= 0) {
      throw new IllegalArgumentException("max must be > 0, got " + max);
    }
    long timeoutUs = timeout == null || timeout.isNegative() ? -1 : saturatedMicros(timeout);
    return call(() -> marshaller.awaitResponses(peer, max, timeoutUs));
  }

  private static long saturatedMicros(Duration d) {
    try {
      return d.toNanos() / 1000;
    } catch (ArithmeticException overflow) {
      return Long.MAX_VALUE / 2;
    }
  }

  @Override
  public List<KvEvent> drainKvEvents(int max) {
    if (max <= 0) {
      throw new IllegalArgumentException("max must be > 0, got " + max);
    }
    return call(() -> marshaller.drainKvEvents(peer, max));
  }

  // ---------------------------------------------------------------------------------------------
  // Stats, configuration, tokenizer, clock

  @Override
  public IterationStats iterationStats() {
    return call(() -> ExecutorMarshaller.iterationStats(peer));
  }

  @Override
  public KvCacheStats kvCacheStats(int rank) {
    if (rank < 0 || rank >= numRanks) {
      throw new IllegalArgumentException("rank " + rank + " is out of range [0, " + numRanks + ")");
    }
    return call(() -> ExecutorMarshaller.kvCacheStats(peer, rank));
  }

  @Override
  public int numRanks() {
    return numRanks;
  }

  @Override
  public int tokensPerBlock() {
    return tokensPerBlock;
  }

  @Override
  public String describe() {
    return call(() -> NativeBridge.utf8(peer.describe()));
  }

  @Override
  public boolean hasModelTokenizer() {
    return backend.capabilities().contains(ExecutorBackendProvider.Capability.MODEL_TOKENIZER);
  }

  @Override
  public int[] tokenize(String text) {
    return tokenize(text, 0);
  }

  @Override
  public int[] tokenizeChat(String messagesJson) {
    return tokenize(messagesJson, 1);
  }

  private int[] tokenize(String text, int mode) {
    Objects.requireNonNull(text, "text");
    requireModelTokenizer();
    return call(() -> marshaller.tokenize(peer, text, mode));
  }

  @Override
  public String detokenize(int[] tokens) {
    Objects.requireNonNull(tokens, "tokens");
    requireModelTokenizer();
    return call(() -> marshaller.detokenize(peer, tokens));
  }

  private void requireModelTokenizer() {
    if (!hasModelTokenizer()) {
      throw new UnsupportedOperationException("the " + backend() + " backend has no model tokenizer");
    }
  }

  @Override
  public ClockMode clockMode() {
    return clockMode;
  }

  @Override
  public long nowMicros() {
    return call(peer::nowUs);
  }

  @Override
  public void advanceTo(long timeMicros) {
    run(() -> peer.advanceTo(timeMicros));
  }

  @Override
  public long nextIterationEndMicros() {
    return call(peer::nextIterationEndUs);
  }

  @Override
  public void shutdown() {
    run(peer::shutdown);
  }

  // ---------------------------------------------------------------------------------------------
  // Lifecycle (NativeResource)

  @Override
  protected String describeResource() {
    return backend() + " executor";
  }

  /** Wakes every blocked awaitResponses; calls already inside the native object finish first. */
  @Override
  protected void interrupt() {
    peer.shutdown();
  }

  @Override
  protected void free() {
    AffinityNative.destroyExecutor(peer);
    peer.setNull();
    marshaller.free();
    backend.closed();
    log.debug("closed {} executor", backend());
  }
}
