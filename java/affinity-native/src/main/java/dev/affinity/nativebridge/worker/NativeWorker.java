package dev.affinity.nativebridge.worker;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.executor.ContextPhaseParams;
import dev.affinity.executor.Executor;
import dev.affinity.executor.KvEvent;
import dev.affinity.executor.ResponseDispatcher;
import dev.affinity.kv.HashAlgorithm;
import dev.affinity.nativebridge.HandoffDomain;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.CompletionRequest;
import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.timer.RealScheduler;
import dev.affinity.timer.Scheduler;
import dev.affinity.worker.TokenCodec;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerCall;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerInfo;
import dev.affinity.worker.WorkerListener;
import dev.affinity.worker.WorkerRequest;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An in-process worker over a native executor (the CPU executor here, the TensorRT-LLM backend on
 * GPU machines). It speaks the same OpenAI + {@code disaggregated_params} contract as a trtllm-serve
 * worker, but hands the conversation id, the sub-agent affinity id and the router's rank hint straight
 * to the executor. Text prompts and chat messages are tokenized by the worker's {@link TokenCodec}: a
 * real BPE tokenizer with a plain chat template for the CPU executor, the model's own tokenizer and
 * chat template ({@link ModelTokenCodec}) for the pytorch backend. Each call is a {@link NativeCall}.
 * Responses come in batches ({@link ResponseDispatcher}): from one poller thread, or, for a
 * {@linkplain #pumped pumped} worker, whenever its owner calls {@link #pump()} (the fleet simulator
 * drives virtual-clock executors that way, on one thread, with a virtual-time {@link Scheduler}).
 *
 * <p>The workers of one fleet share a {@link HandoffDomain} (given here and to their executors): a
 * generation-first leg waits in it for its context leg. A worker without one serves every other leg,
 * and answers a generation leg that would wait for its context in process with a worker error.
 */
public final class NativeWorker implements Worker {
  private static final Logger log = LoggerFactory.getLogger(NativeWorker.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int KV_EVENT_BATCH = 4096;

  private final String id;
  private final Executor executor;
  private final TokenCodec codec;
  private final int defaultMaxTokens;
  private final HandoffDomain handoff;
  private final WorkerInfo info;
  private final ResponseDispatcher dispatcher;
  private final Scheduler timers;
  /** The timer thread this worker owns (threaded workers); null when pumped. */
  private final RealScheduler ownTimers;
  private final AtomicBoolean closed = new AtomicBoolean();
  private volatile String contextEndpoint;
  private volatile Thread eventPoller;
  private volatile Consumer<List<KvEvent>> pumpedKvSink;

  /** A worker without a hand-off domain, with its own poller and timer threads; it owns the executor. */
  public NativeWorker(String id, Executor executor, TokenCodec codec, int defaultMaxTokens) {
    this(id, executor, codec, defaultMaxTokens, null, null);
  }

  /**
   * A worker of a fleet, with its own response poller, KV-event poller and timer threads; it owns
   * the executor (create that in the same {@code handoff}; null: none).
   */
  public NativeWorker(String id, Executor executor, TokenCodec codec, int defaultMaxTokens, HandoffDomain handoff) {
    this(id, executor, codec, defaultMaxTokens, handoff, null);
  }

  /** {@link #pumped(String, Executor, TokenCodec, int, Scheduler, HandoffDomain)} without a hand-off domain. */
  public static NativeWorker pumped(String id, Executor executor, TokenCodec codec, int defaultMaxTokens, Scheduler timers) {
    return pumped(id, executor, codec, defaultMaxTokens, timers, null);
  }

  /**
   * A worker without threads of its own: responses and KV events are delivered when the caller
   * invokes {@link #pump()}, and request timeouts run on {@code timers}. It owns the executor.
   */
  public static NativeWorker pumped(String id, Executor executor, TokenCodec codec, int defaultMaxTokens, Scheduler timers,
      HandoffDomain handoff) {
    return new NativeWorker(id, executor, codec, defaultMaxTokens, handoff, Objects.requireNonNull(timers, "timers"));
  }

  private NativeWorker(String id, Executor executor, TokenCodec codec, int defaultMaxTokens, HandoffDomain handoff,
      Scheduler pumpedTimers) {
    this.id = id;
    this.executor = executor;
    this.codec = codec;
    this.defaultMaxTokens = defaultMaxTokens;
    this.handoff = handoff;
    int maxBatch = 64;
    int maxNumTokens = WorkerInfo.DEFAULT_MAX_NUM_TOKENS;
    HashAlgorithm hashes = HashAlgorithm.V1_BLOCK_KEY;
    try {
      JsonNode cfg = JSON.readTree(executor.describe());
      maxBatch = cfg.path("max_batch_size").asInt(cfg.at("/llm_args/max_batch_size").asInt(64));
      maxNumTokens = cfg.path("max_num_tokens").asInt(cfg.at("/llm_args/max_num_tokens").asInt(maxNumTokens));
      if (cfg.hasNonNull("kv_cache_hash_algo")) { // the pytorch backend: whatever the LLM's KV cache manager uses
        hashes = HashAlgorithm.fromWireName(cfg.get("kv_cache_hash_algo").asText());
      }
    } catch (java.io.IOException e) {
      log.warn("worker {}: cannot read the executor's configuration", id, e);
    }
    this.info = new WorkerInfo(executor.tokensPerBlock(), hashes, executor.numRanks(), true, maxBatch,
        maxNumTokens > 0 ? maxNumTokens : WorkerInfo.DEFAULT_MAX_NUM_TOKENS);
    if (pumpedTimers == null) {
      this.dispatcher = new ResponseDispatcher(executor, id);
      this.ownTimers = new RealScheduler("affinity-worker-timer-" + id);
      this.timers = ownTimers;
    } else {
      this.dispatcher = ResponseDispatcher.pumped(executor, 1024);
      this.ownTimers = null;
      this.timers = pumpedTimers;
    }
  }

  /** Whether this worker is driven by {@link #pump()} rather than threads of its own. */
  public boolean isPumped() {
    return ownTimers == null;
  }

  /**
   * Pumped workers only: delivers the responses and KV events that are ready now, on this thread.
   * Returns the number of responses delivered.
   */
  public int pump() {
    if (!isPumped()) {
      throw new IllegalStateException("worker " + id + " has its own poller threads");
    }
    int n = dispatcher.pump();
    Consumer<List<KvEvent>> sink = pumpedKvSink;
    if (sink != null && isAlive()) {
      List<KvEvent> events;
      do {
        events = executor.drainKvEvents(KV_EVENT_BATCH);
        if (!events.isEmpty()) {
          sink.accept(events);
        }
      } while (events.size() == KV_EVENT_BATCH);
    }
    return n;
  }

  @Override
  public String id() {
    return id;
  }

  @Override
  public WorkerInfo info() {
    return info;
  }

  @Override
  public boolean isAlive() {
    return !closed.get() && !executor.isClosed() && dispatcher.isHealthy();
  }

  /** The executor's statistics of the rank (null once it is closed). */
  @Override
  public dev.affinity.executor.KvCacheStats kvCacheStats(int rank) {
    return executor.isClosed() ? null : executor.kvCacheStats(rank);
  }

  public Executor executor() {
    return executor;
  }

  /**
   * The URL a generation worker in another process tells when it has pulled one of this worker's contexts
   * ({@code POST <url>/release_context}), sent with each context's params as {@code ctx_info_endpoint} (the field
   * upstream's disaggregated params carry the context side's transfer endpoint in); null (the default) sends none.
   */
  public void advertiseContextEndpoint(String url) {
    this.contextEndpoint = url;
  }

  /** The URL {@link #advertiseContextEndpoint} set, or null. */
  public String contextEndpoint() {
    return contextEndpoint;
  }

  /** The worker's text-to-ids codec. */
  public TokenCodec codec() {
    return codec;
  }

  int defaultMaxTokens() {
    return defaultMaxTokens;
  }

  ResponseDispatcher dispatcher() {
    return dispatcher;
  }

  Scheduler timers() {
    return timers;
  }

  /** The fleet's hand-off domain, or null. */
  HandoffDomain handoff() {
    return handoff;
  }

  // -------------------------------------------------------------------------------------------
  // Requests

  /** Prompt token ids of a request: its own ids, or its text / messages tokenized. */
  /** Text as this worker's tokenizer encodes it (no special tokens): how a cut stream's text is continued. */
  public int[] encodeText(String text) {
    return codec.encode(text);
  }

  /** The executor drops the turns it retains for the conversation (per-conversation reuse policy). */
  @Override
  public void endSession(String conversationId) {
    if (!closed.get()) {
      executor.endConversation(conversationId);
    }
  }

  @Override
  public java.util.concurrent.CompletableFuture<int[]> tokenize(String text) {
    return java.util.concurrent.CompletableFuture.completedFuture(encodeText(text));
  }

  public int[] promptTokens(OpenAiRequest body) {
    int[] sent = dev.affinity.admission.PromptTokenizer.clientIds(body);
    if (sent != null) {
      return sent;
    }
    if (body instanceof CompletionRequest c) {
      return codec.encodePrompt(c.promptText().orElse(""), c.addSpecialTokens() == null || c.addSpecialTokens());
    }
    return codec.encodeChat((ChatCompletionRequest) body);
  }

  @Override
  public WorkerCall send(WorkerRequest request, WorkerListener listener) {
    NativeCall call = new NativeCall(this, request, listener);
    if (closed.get()) {
      call.fail(new WorkerFailure(WorkerFailure.Kind.CONNECT, 0, "worker " + id + " is closed", false));
      return call::cancel;
    }
    DisaggregatedParams params = request.body().disaggregatedParams();
    boolean waitsForContext = request.leg() == DisaggRequestType.GENERATION_ONLY
        && (params == null || params.opaqueState() == null);
    if (!waitsForContext) {
      call.start(params);
    } else if (handoff == null) {
      call.fail(new WorkerFailure(WorkerFailure.Kind.WORKER_ERROR, 502, "worker " + id + ": a generation leg without "
          + "context phase params waits for its context in process, and this worker has no hand-off domain", false));
    } else {
      // Generation-first: the context leg has not run yet; wait for it in the fleet's hand-off domain.
      long key = params != null && params.ctxRequestId() != null ? params.ctxRequestId() : request.requestId();
      CompletableFuture<ContextPhaseParams> context = handoff.awaitContext(key);
      call.onCancel(() -> context.cancel(false));
      context.whenComplete((cp, err) -> {
        handoff.forgetContext(key);
        if (err != null || cp == null) {
          call.fail(new WorkerFailure(WorkerFailure.Kind.CANCELLED, 0, "cancelled while waiting for the context", false));
        } else {
          call.startGeneration(cp);
        }
      });
    }
    return call::cancel;
  }

  @Override
  public void releaseContext(DisaggregatedParams contextParams) {
    if (contextParams != null && contextParams.ctxRequestId() != null && isAlive()) {
      executor.cancel(contextParams.ctxRequestId());
    }
  }

  @Override
  public void onKvEvents(Consumer<List<KvEvent>> sink) {
    if (isPumped()) {
      pumpedKvSink = sink;
      return;
    }
    Thread t = new Thread(() -> {
      while (!closed.get()) {
        try {
          List<KvEvent> events = executor.drainKvEvents(KV_EVENT_BATCH);
          if (!events.isEmpty()) {
            sink.accept(events);
          } else {
            Thread.sleep(20);
          }
        } catch (IllegalStateException gone) {
          return;
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        } catch (RuntimeException e) {
          log.warn("worker {}: KV event delivery failed", id, e);
        }
      }
    }, "affinity-kv-events-" + id);
    t.setDaemon(true);
    t.start();
    eventPoller = t;
  }

  /** Closes the worker and its executor; the hand-off domain belongs to the fleet and stays open. */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    dispatcher.close();
    Thread t = eventPoller;
    if (t != null) {
      t.interrupt();
    }
    if (ownTimers != null) {
      ownTimers.close();
    }
    executor.close();
  }
}
