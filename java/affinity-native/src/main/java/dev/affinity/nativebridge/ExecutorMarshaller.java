package dev.affinity.nativebridge;

import dev.affinity.executor.ContextPhaseParams;
import dev.affinity.executor.ExecutorErrorKind;
import dev.affinity.executor.ExecutorRequest;
import dev.affinity.executor.ExecutorResponse;
import dev.affinity.executor.FinishReason;
import dev.affinity.executor.IterationStats;
import dev.affinity.executor.KvCacheStats;
import dev.affinity.executor.KvEvent;
import dev.affinity.executor.KvEventType;
import dev.affinity.executor.KvRetention;
import dev.affinity.executor.RankSource;
import dev.affinity.executor.RequestMetrics;
import dev.affinity.nativebridge.peer.ExecutorPeer;
import dev.affinity.nativebridge.peer.IterationStatsPeer;
import dev.affinity.nativebridge.peer.KvCacheStatsPeer;
import dev.affinity.nativebridge.peer.KvEventBatchPeer;
import dev.affinity.nativebridge.peer.RequestSpecPeer;
import dev.affinity.nativebridge.peer.ResponseBatchPeer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Function;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.LongPointer;

/**
 * The one place where Java values cross into and out of the native facade: requests into
 * {@code RequestSpec} (each field of {@link ExecutorRequest} is written here and nowhere else),
 * packed response and KV-event batches back into records, statistics and tokenizer calls. Token
 * arrays cross off-heap; a batch crosses in a few copies. Native buffers come from a pool of
 * {@link Scratch} sets, so concurrent calls never share one and a hot call allocates nothing native;
 * {@link #free()} releases the pool once no call can run.
 */
final class ExecutorMarshaller {
  private final ConcurrentLinkedQueue<Scratch> pool = new ConcurrentLinkedQueue<>();

  private <T> T withScratch(Function<Scratch, T> fn) {
    Scratch s = pool.poll();
    if (s == null) {
      s = new Scratch();
    }
    try {
      return fn.apply(s);
    } finally {
      pool.offer(s);
    }
  }

  /** Frees every pooled buffer; no call may run any more. */
  void free() {
    for (Scratch s = pool.poll(); s != null; s = pool.poll()) {
      s.free();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Requests

  long enqueue(ExecutorPeer peer, ExecutorRequest request) {
    return withScratch(sc -> {
      fill(sc.spec, request, sc);
      return peer.enqueue(sc.spec);
    });
  }

  long[] enqueueAll(ExecutorPeer peer, List<ExecutorRequest> requests) {
    return withScratch(sc -> {
      try {
        for (ExecutorRequest r : requests) {
          fill(sc.spec, r, sc);
          sc.batch.add(sc.spec);  // copies the spec, tokens included: the buffers are reused for the next
        }
        int n = requests.size();
        LongPointer ids = sc.longs(n);
        peer.enqueueBatch(sc.batch, ids);
        long[] out = new long[n];
        ids.get(out, 0, n);
        return out;
      } finally {
        sc.batch.clear();
      }
    });
  }

  /** Writes every field of the request into the (reset) spec. */
  private static void fill(RequestSpecPeer s, ExecutorRequest r, Scratch sc) {
    s.reset();
    s.setClientRequestId(r.clientRequestId());
    s.setInputTokens(sc.tokens(r.inputTokens()), r.inputTokens().length);
    s.setMaxNewTokens(r.maxNewTokens());
    s.setRequestType(r.type().code());
    s.setStreaming(r.streaming());
    s.setEndId(r.endId());
    int[] stop = r.stopTokenIds();
    s.setStopTokenIds(stop, stop.length);
    s.setSeed(r.seed());
    byte[] conversation = utf8(r.conversationId());
    s.setConversationId(conversation, conversation.length);
    byte[] affinity = utf8(r.subagentAffinityId());
    s.setSubagentAffinityId(affinity, affinity.length);
    s.setAdpRankHint(r.adpRankHint(), r.adpRelax());
    s.setPriority(r.priority());
    if (r.cacheSalt() != null) {
      byte[] salt = utf8(r.cacheSalt());
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
    KvRetention retention = r.retention();
    if (retention != null) {
      for (KvRetention.TokenRange t : retention.ranges()) {
        s.addRetentionRange(t.start(), t.end(), t.priority(), t.durationMs());
      }
      s.setDecodeRetention(retention.decodePriority(), retention.decodeDurationMs());
    }
  }

  private static byte[] utf8(String value) {
    return value == null ? new byte[0] : value.getBytes(StandardCharsets.UTF_8);
  }

  // ---------------------------------------------------------------------------------------------
  // Responses and events

  List<ExecutorResponse> awaitResponses(ExecutorPeer peer, int max, long timeoutUs) {
    return withScratch(sc -> {
      try {
        int n = peer.awaitResponses(sc.responses, max, timeoutUs);
        return n == 0 ? List.<ExecutorResponse>of() : decodeResponses(sc.responses, n, sc);
      } finally {
        sc.responses.clear();
      }
    });
  }

  private static List<ExecutorResponse> decodeResponses(ResponseBatchPeer batch, int n, Scratch sc) {
    final int stride = ResponseBatchPeer.LONG_STRIDE;
    long[] f = sc.copyLongs(n * stride, batch::copyLongs);
    int[] tokens = sc.copyInts(batch.totalTokens(), batch::copyTokens);
    int[] firstGen = sc.copyInts(batch.totalFirstGenTokens(), batch::copyFirstGenTokens);
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
          f[o + ResponseBatchPeer.TRANSFER_US],
          RankSource.fromCode((int) f[o + ResponseBatchPeer.RANK_SOURCE]));
      out.add(new ExecutorResponse(
          f[o + ResponseBatchPeer.REQUEST_ID],
          f[o + ResponseBatchPeer.CLIENT_REQUEST_ID],
          Arrays.copyOfRange(tokens, tokOff, tokOff + tokCount),
          FinishReason.fromCode((int) f[o + ResponseBatchPeer.FINISH_REASON]),
          f[o + ResponseBatchPeer.IS_FINAL] != 0,
          error,
          ExecutorErrorKind.fromCode((int) f[o + ResponseBatchPeer.ERROR_KIND]),
          cp,
          m));
    }
    return out;
  }

  List<KvEvent> drainKvEvents(ExecutorPeer peer, int max) {
    return withScratch(sc -> {
      KvEventBatchPeer batch = sc.kvEvents;
      try {
        int n = peer.drainKvEvents(batch, max);
        if (n == 0) {
          return List.<KvEvent>of();
        }
        final int stride = KvEventBatchPeer.LONG_STRIDE;
        long[] f = sc.copyLongs(n * stride, batch::copyLongs);
        long[] hashes = sc.copyLongs(batch.totalHashes(), batch::copyHashes);
        int[] tokens = sc.copyInts(batch.totalTokens(), batch::copyTokens);
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
        batch.clear();
      }
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Statistics and the model's tokenizer

  static IterationStats iterationStats(ExecutorPeer peer) {
    try (IterationStatsPeer s = new IterationStatsPeer()) {
      peer.getIterationStats(s);
      return new IterationStats(s.iterations(), s.lastIterationStartUs(), s.lastIterationDurationUs(),
          s.lastContextRequests(), s.lastGenerationRequests(), s.lastContextTokens(), s.activeRequests(),
          s.pendingRequests(), s.heldContexts(), s.completedRequests(), s.totalPromptTokens(),
          s.totalReusedTokens(), s.totalGeneratedTokens(), s.busyUs(), s.rejectedPollItems());
    }
  }

  static KvCacheStats kvCacheStats(ExecutorPeer peer, int rank) {
    try (KvCacheStatsPeer s = new KvCacheStatsPeer()) {
      peer.getKvCacheStats(rank, s);
      return new KvCacheStats(rank, s.maxNumBlocks(), s.freeNumBlocks(), s.usedNumBlocks(), s.cachedNumBlocks(),
          s.tokensPerBlock(), s.allocTotalBlocks(), s.allocNewBlocks(), s.reusedBlocks(), s.missedBlocks(),
          s.evictedBlocks(), s.activeRequests(), s.queuedRequests(), s.cacheHitRate(), s.contextTokensComputed());
    }
  }

  /** mode 0: text; 1: chat messages as JSON (executor.h). */
  int[] tokenize(ExecutorPeer peer, String text, int mode) {
    return withScratch(sc -> {
      try (BytePointer t = new BytePointer(text, StandardCharsets.UTF_8)) {
        int capacity = Math.max(256, (int) Math.min(Integer.MAX_VALUE, t.limit() + 64));
        IntPointer ids = sc.ints(capacity);
        int n = peer.tokenize(t, mode, ids, capacity);
        if (n > capacity) {  // more ids than the first guess: once more with room for all
          ids = sc.ints(n);
          n = peer.tokenize(t, mode, ids, n);
        }
        int[] out = new int[n];
        ids.get(out, 0, n);
        return out;
      }
    });
  }

  String detokenize(ExecutorPeer peer, int[] tokens) {
    return withScratch(sc -> NativeBridge.utf8(peer.detokenize(sc.tokens(tokens), tokens.length)));
  }
}
