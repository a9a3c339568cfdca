package dev.affinity.nativebridge;

import dev.affinity.executor.ClockMode;
import dev.affinity.executor.ContextPhaseParams;
import dev.affinity.executor.Executor;
import dev.affinity.executor.ExecutorException;
import dev.affinity.executor.ExecutorRequest;
import dev.affinity.executor.ExecutorResponse;
import dev.affinity.executor.FinishReason;
import dev.affinity.executor.IterationStats;
import dev.affinity.executor.KvCacheStats;
import dev.affinity.executor.KvEvent;
import dev.affinity.executor.KvEventType;
import dev.affinity.executor.RequestMetrics;
import dev.affinity.nativebridge.peer.AffinityNative;
import dev.affinity.nativebridge.python.PyTorchBackend;
import dev.affinity.nativebridge.peer.ExecutorPeer;
import dev.affinity.nativebridge.peer.IterationStatsPeer;
import dev.affinity.nativebridge.peer.KvCacheStatsPeer;
import dev.affinity.nativebridge.peer.KvEventBatchPeer;
import dev.affinity.nativebridge.peer.RequestBatchPeer;
import dev.affinity.nativebridge.peer.RequestSpecPeer;
import dev.affinity.nativebridge.peer.ResponseBatchPeer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.function.Supplier;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.LongPointer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An {@link Executor} backed by the native facade through JavaCPP. Safe to close while other threads
 * call it: {@link #close()} shuts the executor down (which wakes blocked {@link #awaitResponses}
 * calls), waits until every call in flight has returned, and only then frees the native object
 * (the usage-counting pattern of ONNX Runtime's {@code NativeObject}). Token arrays cross the
 * boundary off-heap; responses and events cross in packed batches. C++ exceptions arrive as
 * {@link ExecutorException} with the native message.
 */
public final class NativeExecutor implements Executor {
  private static final Logger log = LoggerFactory.getLogger(NativeExecutor.class);

  private final ExecutorPeer peer;
  private final String backend;
  private final int numRanks;
  private final int tokensPerBlock;
  private final ClockMode clockMode;
  private final Object usage = new Object();
  /** Reusable native buffers, so that a hot enqueue / await allocates nothing native; freed by close(). */
  private final java.util.concurrent.ConcurrentLinkedQueue<Scratch> scratch = new java.util.concurrent.ConcurrentLinkedQueue<>();
  private int inFlight;
  private boolean closing;
  private boolean closed;

  private NativeExecutor(ExecutorPeer peer, String backend) {
    this.peer = peer;
    this.backend = backend;
    this.numRanks = peer.numRanks();
    this.tokensPerBlock = peer.tokensPerBlock();
    this.clockMode = ClockMode.fromCode(peer.clockMode());
  }

  /**
   * Creates an executor of the named backend ("sim" is the CPU executor, "pytorch" TensorRT-LLM's
   * PyTorch executor in an embedded CPython, see {@link PyTorchBackend}) from a JSON configuration
   * ("" or "{}" for defaults). Throws {@link ExecutorException} naming an unknown backend or a bad key.
   */
  public static NativeExecutor create(String backend, String configJson) {
    Objects.requireNonNull(backend, "backend");
    NativeBridge.ensureAvailability();
    if (PyTorchBackend.NAME.equals(backend)) {
      configJson = PyTorchBackend.prepare(configJson);
    }
    ExecutorPeer p;
    try (BytePointer b = new BytePointer(backend, StandardCharsets.UTF_8);
        BytePointer c = new BytePointer(configJson == null ? "" : configJson, StandardCharsets.UTF_8)) {
      p = AffinityNative.createExecutor(b, c);
    } catch (RuntimeException e) {
      throw new ExecutorException(e.getMessage(), e);
    }
    if (p == null || p.isNull()) {
      throw new ExecutorException("native createExecutor returned no executor for backend \"" + backend + "\"");
    }
    NativeExecutor ex = new NativeExecutor(p, backend);
    if (PyTorchBackend.NAME.equals(backend)) {
      PyTorchBackend.opened();
    }
    log.debug("created {} executor: {} ranks, {} tokens per block, {} clock", backend, ex.numRanks,
        ex.tokensPerBlock, ex.clockMode);
    return ex;
  }

  /**
   * Validates a configuration's keys as {@link #create} would, without creating anything: no thread,
   * no Python interpreter is run or loaded, no model. Throws {@link ExecutorException} naming the bad key.
   */
  public static void checkConfig(String backend, String configJson) {
    Objects.requireNonNull(backend, "backend");
    NativeBridge.ensureAvailability();
    if (PyTorchBackend.NAME.equals(backend)) {
      configJson = PyTorchBackend.prepareForCheck(configJson);
    }
    try (BytePointer b = new BytePointer(backend, StandardCharsets.UTF_8);
        BytePointer c = new BytePointer(configJson == null ? "" : configJson, StandardCharsets.UTF_8)) {
      AffinityNative.checkExecutorConfig(b, c);
    } catch (RuntimeException e) {
      throw new ExecutorException(e.getMessage(), e);
    }
  }

  @Override
  public String backend() {
    return backend;
  }

  /**
   * Native buffers for one call at a time: a request spec, a token buffer, a request batch, a
   * response batch, a KV event batch and copy-out buffers. Pooled and reused across calls (a call takes one from the pool
   * and returns it), because allocating JavaCPP pointers per call dominates short calls (each
   * allocation checks the process's physical memory).
   */
  private static final class Scratch {
    final RequestSpecPeer spec = new RequestSpecPeer();
    final ResponseBatchPeer responses = new ResponseBatchPeer();
    final KvEventBatchPeer kvEvents = new KvEventBatchPeer();
    final RequestBatchPeer batch = new RequestBatchPeer();
    IntPointer tokens = new IntPointer(256);
    LongPointer longsOut = new LongPointer(256);
    IntPointer intsOut = new IntPointer(256);

    /** A buffer of at least {@code n} longs (contents undefined). */
    LongPointer longs(int n) {
      if (longsOut.capacity() < n) {
        longsOut.close();
        longsOut = new LongPointer(Math.max(n, longsOut.capacity() * 2));
      }
      return longsOut.position(0);
    }

    /** A buffer of at least {@code n} ints (contents undefined). */
    IntPointer ints(int n) {
      if (intsOut.capacity() < n) {
        intsOut.close();
        intsOut = new IntPointer(Math.max(n, intsOut.capacity() * 2));
      }
      return intsOut.position(0);
    }

    IntPointer tokens(int[] values) {
      if (tokens.capacity() < values.length) {
        tokens.close();
        tokens = new IntPointer(Math.max(values.length, tokens.capacity() * 2));
      }
      tokens.position(0).put(values, 0, values.length);
      return tokens;
    }

    void free() {
      spec.close();
      responses.close();
      kvEvents.close();
      batch.close();
      tokens.close();
      longsOut.close();
      intsOut.close();
    }
  }

  private Scratch takeScratch() {
    Scratch s = scratch.poll();
    return s != null ? s : new Scratch();
  }

  // ---------------------------------------------------------------------------------------------
  // Usage counting

  private void enter() {
    synchronized (usage) {
      if (closing) {
        throw new IllegalStateException(backend + " executor is closed");
      }
      inFlight++;
    }
  }

  private void exit() {
    synchronized (usage) {
      if (--inFlight == 0) {
        usage.notifyAll();
      }
    }
  }

  private <T> T call(Supplier<T> fn) {
    enter();
    try {
      return fn.get();
    } catch (IllegalStateException | IllegalArgumentException | ExecutorException e) {
      throw e;
    } catch (RuntimeException e) {
      throw new ExecutorException(e.getMessage(), e);
    } finally {
      exit();
    }
  }

  private void run(Runnable fn) {
    call(() -> {
      fn.run();
      return null;
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Requests

  @Override
  public long enqueue(ExecutorRequest request) {
    Objects.requireNonNull(request, "request");
    return call(() -> {
      Scratch sc = takeScratch();
      try {
        sc.spec.reset();
        fill(sc.spec, request, sc.tokens(request.inputTokens()));
        return peer.enqueue(sc.spec);
      } finally {
        scratch.offer(sc);
      }
    });
  }

  @Override
  public long[] enqueueAll(List<ExecutorRequest> requests) {
    Objects.requireNonNull(requests, "requests");
    if (requests.isEmpty()) {
      return new long[0];
    }
    return call(() -> {
      Scratch sc = takeScratch();
      try {
        RequestBatchPeer batch = sc.batch;
        for (ExecutorRequest r : requests) {
          sc.spec.reset();
          fill(sc.spec, r, sc.tokens(r.inputTokens()));
          batch.add(sc.spec);  // copies the spec, tokens included: the buffers are reused for the next
        }
        int n = requests.size();
        LongPointer ids = sc.longs(n);
        peer.enqueueBatch(batch, ids);
        long[] out = new long[n];
        ids.get(out, 0, n);
        return out;
      } finally {
        sc.batch.clear();
        scratch.offer(sc);
      }
    });
  }

  private static void fill(RequestSpecPeer s, ExecutorRequest r, IntPointer tokens) {
    s.setClientRequestId(r.clientRequestId());
    s.setInputTokens(tokens, r.inputTokens().length);
    s.setMaxNewTokens(r.maxNewTokens());
    s.setRequestType(r.type().code());
    s.setStreaming(r.streaming());
    s.setEndId(r.endId());
    int[] stop = r.stopTokenIds();
    s.setStopTokenIds(stop, stop.length);
    s.setSeed(r.seed());
    setBytes(r.conversationId(), s::setConversationId);
    setBytes(r.subagentAffinityId(), s::setSubagentAffinityId);
    s.setAdpRankHint(r.adpRankHint(), r.adpRelax());
    s.setPriority(r.priority());
    if (r.cacheSalt() != null) {
      byte[] salt = r.cacheSalt().getBytes(StandardCharsets.UTF_8);
      s.setCacheSalt(salt, salt.length);
    } else {
      s.clearCacheSalt();
    }
    ContextPhaseParams cp = r.contextPhase();
    if (cp != null) {
      int[] first = cp.firstGenTokens();
      byte[] opaque = cp.opaqueState();
      s.setContextPhase(cp.ctxRequestId(), cp.ctxDpRank(), first, first.length, opaque, opaque.length);
    }
  }

  private interface BytesSetter {
    void set(byte[] data, int n);
  }

  private static void setBytes(String value, BytesSetter setter) {
    byte[] b = value == null ? new byte[0] : value.getBytes(StandardCharsets.UTF_8);
    setter.set(b, b.length);
  }

  @Override
  public void cancel(long requestId) {
    run(() -> peer.cancel(requestId));
  }

  // ---------------------------------------------------------------------------------------------
  // Responses and events

  @Override
  public List<ExecutorResponse> awaitResponses(int max, Duration timeout) {
    if (max <= 0) {
      throw new IllegalArgumentException("max must be > 0, got " + max);
    }
    long timeoutUs = timeout == null || timeout.isNegative() ? -1 : saturatedMicros(timeout);
    return call(() -> {
      Scratch sc = takeScratch();
      try {
        int n = peer.awaitResponses(sc.responses, max, timeoutUs);
        return n == 0 ? List.<ExecutorResponse>of() : decode(sc.responses, n, sc);
      } finally {
        sc.responses.clear();
        scratch.offer(sc);
      }
    });
  }

  private static long saturatedMicros(Duration d) {
    try {
      return d.toNanos() / 1000;
    } catch (ArithmeticException overflow) {
      return Long.MAX_VALUE / 2;
    }
  }

  private static List<ExecutorResponse> decode(ResponseBatchPeer batch, int n, Scratch sc) {
    final int stride = ResponseBatchPeer.LONG_STRIDE;
    long[] f = copyLongs(n * stride, batch::copyLongs, sc);
    int[] tokens = copyInts(batch.totalTokens(), batch::copyTokens, sc);
    int[] firstGen = copyInts(batch.totalFirstGenTokens(), batch::copyFirstGenTokens, sc);
    List<ExecutorResponse> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      int o = i * stride;
      int tokOff = (int) f[o + ResponseBatchPeer.TOKEN_OFFSET];
      int tokCount = (int) f[o + ResponseBatchPeer.TOKEN_COUNT];
      String error = "";
      int errLen = batch.errorMessageSize(i);
      if (errLen > 0) {
        byte[] e = new byte[errLen];
        batch.copyErrorMessage(i, e);
        error = new String(e, StandardCharsets.UTF_8);
      }
      ContextPhaseParams cp = null;
      if (f[o + ResponseBatchPeer.HAS_CONTEXT_PHASE] != 0) {
        byte[] opaque = new byte[batch.opaqueStateSize(i)];
        if (opaque.length > 0) {
          batch.copyOpaqueState(i, opaque);
        }
        int fo = (int) f[o + ResponseBatchPeer.FIRST_GEN_OFFSET];
        int fc = (int) f[o + ResponseBatchPeer.FIRST_GEN_COUNT];
        cp = new ContextPhaseParams(f[o + ResponseBatchPeer.CTX_REQUEST_ID], (int) f[o + ResponseBatchPeer.CTX_DP_RANK],
            Arrays.copyOfRange(firstGen, fo, fo + fc), opaque);
      }
      RequestMetrics m = new RequestMetrics(
          f[o + ResponseBatchPeer.ARRIVAL_US],
          f[o + ResponseBatchPeer.SCHEDULED_US],
          f[o + ResponseBatchPeer.FIRST_TOKEN_US],
          f[o + ResponseBatchPeer.FINISH_US],
          (int) f[o + ResponseBatchPeer.PROMPT_TOKENS],
          (int) f[o + ResponseBatchPeer.REUSED_TOKENS],
          (int) f[o + ResponseBatchPeer.RANK],
          (int) f[o + ResponseBatchPeer.OUTPUT_TOKENS],
          f[o + ResponseBatchPeer.TRANSFER_US]);
      out.add(new ExecutorResponse(
          f[o + ResponseBatchPeer.REQUEST_ID],
          f[o + ResponseBatchPeer.CLIENT_REQUEST_ID],
          Arrays.copyOfRange(tokens, tokOff, tokOff + tokCount),
          FinishReason.fromCode((int) f[o + ResponseBatchPeer.FINISH_REASON]),
          f[o + ResponseBatchPeer.IS_FINAL] != 0,
          error,
          cp,
          m));
    }
    return out;
  }

  private interface IntCopier {
    void copy(IntPointer out);
  }

  private interface LongCopier {
    void copy(LongPointer out);
  }

  private static int[] copyInts(int count, IntCopier copier, Scratch sc) {
    int[] out = new int[count];
    if (count > 0) {
      IntPointer p = sc.ints(count);
      copier.copy(p);
      p.get(out, 0, count);
    }
    return out;
  }

  private static long[] copyLongs(int count, LongCopier copier, Scratch sc) {
    long[] out = new long[count];
    if (count > 0) {
      LongPointer p = sc.longs(count);
      copier.copy(p);
      p.get(out, 0, count);
    }
    return out;
  }


  @Override
  public List<KvEvent> drainKvEvents(int max) {
    if (max <= 0) {
      throw new IllegalArgumentException("max must be > 0, got " + max);
    }
    return call(() -> {
      Scratch sc = takeScratch();
      try {
        KvEventBatchPeer batch = sc.kvEvents;
        int n = peer.drainKvEvents(batch, max);
        if (n == 0) {
          return List.of();
        }
        final int stride = KvEventBatchPeer.LONG_STRIDE;
        long[] f = copyLongs(n * stride, batch::copyLongs, sc);
        long[] hashes = copyLongs(batch.totalHashes(), batch::copyHashes, sc);
        int[] tokens = copyInts(batch.totalTokens(), batch::copyTokens, sc);
        List<KvEvent> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
          int o = i * stride;
          int ho = (int) f[o + KvEventBatchPeer.HASH_OFFSET];
          int hc = (int) f[o + KvEventBatchPeer.HASH_COUNT];
          int to = (int) f[o + KvEventBatchPeer.TOKEN_OFFSET];
          int tc = (int) f[o + KvEventBatchPeer.TOKEN_COUNT];
          out.add(new KvEvent(
              f[o + KvEventBatchPeer.EVENT_ID],
              KvEventType.fromCode((int) f[o + KvEventBatchPeer.TYPE]),
              (int) f[o + KvEventBatchPeer.RANK],
              (int) f[o + KvEventBatchPeer.WINDOW_SIZE],
              f[o + KvEventBatchPeer.HAS_PARENT] != 0,
              f[o + KvEventBatchPeer.PARENT_HASH],
              Arrays.copyOfRange(hashes, ho, ho + hc),
              Arrays.copyOfRange(tokens, to, to + tc),
              f[o + KvEventBatchPeer.VALUE],
              (int) f[o + KvEventBatchPeer.CACHE_LEVEL]));
        }
        return out;
      } finally {
        sc.kvEvents.clear();
        scratch.offer(sc);
      }
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Stats and clock

  @Override
  public IterationStats iterationStats() {
    return call(() -> {
      try (IterationStatsPeer s = new IterationStatsPeer()) {
        peer.getIterationStats(s);
        return new IterationStats(s.iterations(), s.lastIterationStartUs(), s.lastIterationDurationUs(),
            s.lastContextRequests(), s.lastGenerationRequests(), s.lastContextTokens(), s.activeRequests(),
            s.pendingRequests(), s.heldContexts(), s.completedRequests(), s.totalPromptTokens(),
            s.totalReusedTokens(), s.totalGeneratedTokens(), s.busyUs());
      }
    });
  }

  @Override
  public KvCacheStats kvCacheStats(int rank) {
    if (rank < 0 || rank >= numRanks) {
      throw new IllegalArgumentException("rank " + rank + " is out of range [0, " + numRanks + ")");
    }
    return call(() -> {
      try (KvCacheStatsPeer s = new KvCacheStatsPeer()) {
        peer.getKvCacheStats(rank, s);
        return new KvCacheStats(rank, s.maxNumBlocks(), s.freeNumBlocks(), s.usedNumBlocks(), s.cachedNumBlocks(),
            s.tokensPerBlock(), s.allocTotalBlocks(), s.allocNewBlocks(), s.reusedBlocks(), s.missedBlocks(),
            s.evictedBlocks(), s.activeRequests(), s.queuedRequests(), s.cacheHitRate());
      }
    });
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
    return PyTorchBackend.NAME.equals(backend);
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
    return call(() -> {
      Scratch s = takeScratch();
      try (BytePointer t = new BytePointer(text, StandardCharsets.UTF_8)) {
        int capacity = Math.max(256, (int) Math.min(Integer.MAX_VALUE, t.limit() + 64));
        IntPointer ids = s.ints(capacity);
        int n = peer.tokenize(t, mode, ids, capacity);
        if (n > capacity) {  // more ids than the first guess: once more with room for all
          ids = s.ints(n);
          n = peer.tokenize(t, mode, ids, n);
        }
        int[] out = new int[n];
        ids.get(out, 0, n);
        return out;
      } finally {
        scratch.offer(s);
      }
    });
  }

  @Override
  public String detokenize(int[] tokens) {
    Objects.requireNonNull(tokens, "tokens");
    requireModelTokenizer();
    return call(() -> {
      Scratch s = takeScratch();
      try {
        return NativeBridge.utf8(peer.detokenize(s.tokens(tokens), tokens.length));
      } finally {
        scratch.offer(s);
      }
    });
  }

  private void requireModelTokenizer() {
    if (!hasModelTokenizer()) {
      throw new UnsupportedOperationException("the " + backend + " backend has no model tokenizer");
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

  @Override
  public boolean isClosed() {
    synchronized (usage) {
      return closing;
    }
  }

  @Override
  public void close() {
    synchronized (usage) {
      if (closing) {
        while (!closed) {
          try {
            usage.wait();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
          }
        }
        return;
      }
      closing = true;
    }
    // Wakes every blocked awaitResponses; calls already inside the native object finish first.
    peer.shutdown();
    boolean interrupted = false;
    synchronized (usage) {
      while (inFlight > 0) {
        try {
          usage.wait();
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    }
    AffinityNative.destroyExecutor(peer);
    peer.setNull();
    for (Scratch sc = scratch.poll(); sc != null; sc = scratch.poll()) {
      sc.free();
    }
    synchronized (usage) {
      closed = true;
      usage.notifyAll();
    }
    if (PyTorchBackend.NAME.equals(backend)) {
      PyTorchBackend.closed();
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    log.debug("closed {} executor", backend);
  }
}
