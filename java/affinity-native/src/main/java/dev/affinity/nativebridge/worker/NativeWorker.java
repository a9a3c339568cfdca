package dev.affinity.nativebridge.worker;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.timer.RealScheduler;
import dev.affinity.timer.Scheduler;
import dev.affinity.executor.ContextPhaseParams;
import dev.affinity.executor.Executor;
import dev.affinity.executor.ExecutorRequest;
import dev.affinity.executor.ExecutorResponse;
import dev.affinity.executor.FinishReason;
import dev.affinity.executor.KvEvent;
import dev.affinity.executor.RequestType;
import dev.affinity.executor.ResponseDispatcher;
import dev.affinity.kv.HashAlgorithm;
import dev.affinity.protocol.ChatChoice;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ChatCompletionResponse;
import dev.affinity.protocol.ChatCompletionStreamResponse;
import dev.affinity.protocol.ChatDelta;
import dev.affinity.protocol.ChatMessage;
import dev.affinity.protocol.ChatStreamChoice;
import dev.affinity.protocol.CompletionChoice;
import dev.affinity.protocol.CompletionRequest;
import dev.affinity.protocol.CompletionResponse;
import dev.affinity.protocol.CompletionStreamResponse;
import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.DisaggScheduleStyle;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.protocol.TokenIds;
import dev.affinity.protocol.UsageInfo;
import dev.affinity.worker.IncrementalDecoder;
import dev.affinity.worker.TokenCodec;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerCall;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerInfo;
import dev.affinity.worker.WorkerListener;
import dev.affinity.worker.WorkerReport;
import dev.affinity.worker.WorkerRequest;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An in-process worker over a native executor (the CPU executor here, the TensorRT-LLM backend on
 * GPU machines). It speaks the same OpenAI + {@code disaggregated_params} contract as a trtllm-serve
 * worker, but hands the conversation id, the sub-agent affinity id and the router's rank hint straight
 * to the executor. Text prompts and chat messages are tokenized by the worker's {@link TokenCodec}: a
 * real BPE tokenizer with a plain chat template for the CPU executor, the model's own tokenizer and
 * chat template ({@link ModelTokenCodec}) for the pytorch backend.
 * Responses come in batches ({@link ResponseDispatcher}): from one poller thread, or, for a
 * {@linkplain #pumped pumped} worker, whenever its owner calls {@link #pump()} (the fleet simulator
 * drives virtual-clock executors that way, on one thread, with a virtual-time {@link Scheduler}).
 */
public final class NativeWorker implements Worker {
  private static final Logger log = LoggerFactory.getLogger(NativeWorker.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int KV_EVENT_BATCH = 4096;

  private final String id;
  private final Executor executor;
  private final TokenCodec codec;
  private final int defaultMaxTokens;
  private final WorkerInfo info;
  private final ResponseDispatcher dispatcher;
  private final Scheduler timers;
  /** The timer thread this worker owns (threaded workers); null when pumped. */
  private final RealScheduler ownTimers;
  private final AtomicBoolean closed = new AtomicBoolean();
  private volatile Thread eventPoller;
  private volatile Consumer<List<KvEvent>> pumpedKvSink;

  /** A worker with its own response poller, KV-event poller and timer threads; it owns the executor. */
  public NativeWorker(String id, Executor executor, TokenCodec codec, int defaultMaxTokens) {
    this(id, executor, codec, defaultMaxTokens, null);
  }

  /**
   * A worker without threads of its own: responses and KV events are delivered when the caller
   * invokes {@link #pump()}, and request timeouts run on {@code timers}. It owns the executor.
   */
  public static NativeWorker pumped(String id, Executor executor, TokenCodec codec, int defaultMaxTokens, Scheduler timers) {
    return new NativeWorker(id, executor, codec, defaultMaxTokens, java.util.Objects.requireNonNull(timers, "timers"));
  }

  private NativeWorker(String id, Executor executor, TokenCodec codec, int defaultMaxTokens, Scheduler pumpedTimers) {
    this.id = id;
    this.executor = executor;
    this.codec = codec;
    this.defaultMaxTokens = defaultMaxTokens;
    int maxBatch = 64;
    HashAlgorithm hashes = HashAlgorithm.V1_BLOCK_KEY;
    try {
      JsonNode cfg = JSON.readTree(executor.describe());
      maxBatch = cfg.path("max_batch_size").asInt(cfg.at("/llm_args/max_batch_size").asInt(64));
      if (cfg.hasNonNull("kv_cache_hash_algo")) { // the pytorch backend: whatever the LLM's KV cache manager uses
        hashes = HashAlgorithm.fromWireName(cfg.get("kv_cache_hash_algo").asText());
      }
    } catch (java.io.IOException e) {
      log.warn("worker {}: cannot read the executor's configuration", id, e);
    }
    this.info = new WorkerInfo(executor.tokensPerBlock(), hashes, executor.numRanks(), true, maxBatch);
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
    return !closed.get() && !executor.isClosed();
  }

  public Executor executor() {
    return executor;
  }

  // -------------------------------------------------------------------------------------------
  // Requests

  /** Prompt token ids of a request: its own ids, or its text / messages tokenized. */
  public int[] promptTokens(OpenAiRequest body) {
    if (body instanceof CompletionRequest c) {
      if (c.promptTokenIds().isPresent()) {
        return c.promptTokenIds().get().toArray();
      }
      return codec.encode(c.promptText().orElse(""));
    }
    ChatCompletionRequest chat = (ChatCompletionRequest) body;
    if (chat.promptTokenIds() != null) {
      return chat.promptTokenIds().toArray();
    }
    return codec.encodeChat(chat);
  }

  @Override
  public WorkerCall send(WorkerRequest request, WorkerListener listener) {
    Call call = new Call(request, listener);
    if (closed.get()) {
      call.fail(new WorkerFailure(WorkerFailure.Kind.CONNECT, 0, "worker " + id + " is closed", false));
      return call::cancel;
    }
    DisaggregatedParams params = request.body().disaggregatedParams();
    boolean waitsForContext = request.leg() == DisaggRequestType.GENERATION_ONLY
        && (params == null || params.encodedOpaqueState() == null);
    if (waitsForContext) {
      // Generation-first: the context leg has not run yet; wait for it in this process.
      long key = params != null && params.ctxRequestId() != null ? params.ctxRequestId() : request.requestId();
      CompletableFuture<DisaggregatedParams> ctx = ContextRendezvous.await(key);
      call.onCancel = () -> ctx.cancel(false);
      ctx.whenComplete((p, err) -> {
        ContextRendezvous.forget(key);
        if (err != null || p == null) {
          call.fail(new WorkerFailure(WorkerFailure.Kind.CANCELLED, 0, "cancelled while waiting for the context", false));
        } else {
          call.start(p.toBuilder().requestType(DisaggRequestType.GENERATION_ONLY).build());
        }
      });
    } else {
      call.start(params);
    }
    return call::cancel;
  }

  /** One call: its state and its translation of executor responses into protocol objects. */
  private final class Call {
    final WorkerRequest request;
    final WorkerListener listener;
    final OpenAiRequest body;
    final AtomicBoolean ended = new AtomicBoolean();
    final AtomicLong executorId = new AtomicLong(-1);
    final List<Integer> output = new ArrayList<>();
    final IncrementalDecoder decoder = new IncrementalDecoder(codec);
    volatile Runnable onCancel = () -> { };
    volatile Runnable timeout;
    int[] prompt;
    boolean firstChunk = true;
    ExecutorResponse last;

    Call(WorkerRequest request, WorkerListener listener) {
      this.request = request;
      this.listener = listener;
      this.body = request.body();
    }

    void start(DisaggregatedParams params) {
      ExecutorRequest er;
      try {
        er = toExecutorRequest(params);
      } catch (IllegalArgumentException e) {
        fail(new WorkerFailure(WorkerFailure.Kind.CLIENT_ERROR, 400, e.getMessage(), false));
        return;
      }
      timeout = timers.schedule(() -> {
        if (!ended.get()) {
          fail(new WorkerFailure(WorkerFailure.Kind.TIMEOUT, 0, "no answer within " + request.timeout().toMillis() + " ms", false));
          long eid = executorId.get();
          if (eid > 0) {
            executor.cancel(eid);
          }
        }
      }, request.timeout().compareTo(Duration.ofMillis(1)) < 0 ? Duration.ofMillis(1) : request.timeout());
      try {
        executorId.set(dispatcher.submit(er, this::onExecutorResponse));
      } catch (RuntimeException e) {
        fail(new WorkerFailure(WorkerFailure.Kind.CONNECT, 0, "worker " + id + ": " + e.getMessage(), false));
      }
      if (ended.get()) {
        long eid = executorId.get();
        if (eid > 0) {
          executor.cancel(eid);
        }
      }
    }

    private ExecutorRequest toExecutorRequest(DisaggregatedParams params) {
      prompt = promptTokens(body);
      int maxTokens = body.maxOutputTokens().orElse(defaultMaxTokens);
      DisaggRequestType leg = params == null || params.requestType() == null ? DisaggRequestType.CONTEXT_AND_GENERATION
          : params.requestType();
      ExecutorRequest.Builder b = ExecutorRequest.builder(prompt, maxTokens)
          .clientRequestId(request.requestId())
          .streaming(body.isStreaming())
          .seed(body.seed() != null ? body.seed() : 0)
          .conversationId(body.conversationParams() == null ? null : body.conversationParams().conversationId())
          .subagentAffinityId(request.affinityId())
          .adpRankHint(request.rankHint(), true);
      switch (leg) {
        case CONTEXT_ONLY -> b.type(RequestType.CONTEXT_ONLY);
        case GENERATION_ONLY -> {
          if (params.ctxRequestId() == null || params.encodedOpaqueState() == null) {
            throw new IllegalArgumentException("disaggregated_params of a generation_only request need ctx_request_id and "
                + "encoded_opaque_state");
          }
          int[] first = params.firstGenTokens() == null ? new int[0] : params.firstGenTokens().toArray();
          byte[] opaque;
          try {
            opaque = Base64.getDecoder().decode(params.encodedOpaqueState());
          } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("disaggregated_params.encoded_opaque_state is not base64");
          }
          b.contextPhase(new ContextPhaseParams(params.ctxRequestId(), params.ctxDpRank() == null ? -1 : params.ctxDpRank(),
              first, opaque));
        }
        default -> b.type(RequestType.CONTEXT_AND_GENERATION);
      }
      return b.build();
    }

    private void onExecutorResponse(ExecutorResponse r) {
      if (ended.get()) {
        return;
      }
      if (r.finishReason() == FinishReason.CANCELLED) {
        fail(new WorkerFailure(WorkerFailure.Kind.CANCELLED, 0, r.errorMessage(), !firstChunk));
        return;
      }
      if (r.isError()) {
        boolean handoff = r.errorMessage().contains("context");
        fail(new WorkerFailure(handoff ? WorkerFailure.Kind.WORKER_ERROR : WorkerFailure.Kind.CLIENT_ERROR,
            handoff ? 502 : 400, "worker " + id + ": " + r.errorMessage(), !firstChunk));
        return;
      }
      for (int t : r.tokens()) {
        output.add(t);
      }
      last = r;
      if (body.isStreaming()) {
        emitChunk(r.tokens(), r.isFinal() ? finishReason(r) : null, r.isFinal());
      }
      if (!r.isFinal()) {
        return;
      }
      if (!body.isStreaming()) {
        listener.onResponse(wholeResponse(r));
      }
      if (ended.compareAndSet(false, true)) {
        cancelTimer();
        listener.onComplete(new WorkerReport(r.metrics().rank(), r.metrics().reusedTokens(), r.metrics().promptTokens(),
            r.metrics().ttftUs()));
      }
    }

    private String finishReason(ExecutorResponse r) {
      return switch (r.finishReason()) {
        case END_ID, STOP -> "stop";
        default -> "length";
      };
    }

    private UsageInfo usage(ExecutorResponse r) {
      int completion = output.size();
      return new UsageInfo(r.metrics().promptTokens(), completion, r.metrics().promptTokens() + completion,
          r.metrics().reusedTokens());
    }

    private void emitChunk(int[] tokens, String finish, boolean isFinal) {
      String text = decoder.next(tokens, isFinal);
      boolean includeUsage = isFinal && body.streamOptions() != null && Boolean.TRUE.equals(body.streamOptions().includeUsage());
      UsageInfo usage = includeUsage ? usage(last) : null;
      long created = System.currentTimeMillis() / 1000;
      if (body instanceof ChatCompletionRequest chat) {
        ChatDelta delta = new ChatDelta(firstChunk ? "assistant" : null, text, null, null, null, Map.of());
        listener.onChunk(new ChatCompletionStreamResponse("chatcmpl-" + request.requestId(), "chat.completion.chunk", created,
            chat.model(), List.of(new ChatStreamChoice(0, delta, null, finish, null, Map.of())), usage, Map.of()));
      } else {
        listener.onChunk(new CompletionStreamResponse("cmpl-" + request.requestId(), "text_completion", created, body.model(),
            List.of(new CompletionChoice(0, text, null, null, finish, null, null, Map.of())), usage, Map.of()));
      }
      firstChunk = false;
    }

    private OpenAiResponse wholeResponse(ExecutorResponse r) {
      int[] tokens = output.stream().mapToInt(Integer::intValue).toArray();
      String text = codec.decode(tokens);
      DisaggregatedParams ctxParams = null;
      if (r.contextPhase() != null) {
        ContextPhaseParams cp = r.contextPhase();
        DisaggregatedParams in = body.disaggregatedParams();
        ctxParams = DisaggregatedParams.builder(DisaggRequestType.CONTEXT_ONLY)
            .firstGenTokens(TokenIds.of(cp.firstGenTokens()))
            .ctxRequestId(cp.ctxRequestId())
            .encodedOpaqueState(Base64.getEncoder().encodeToString(cp.opaqueState()))
            .disaggRequestId(request.requestId())
            .ctxDpRank(cp.ctxDpRank())
            .scheduleStyle(in == null ? null : in.scheduleStyle())
            .conversationId(in == null ? null : in.conversationId())
            .build();
        if (in != null && in.scheduleStyle() == DisaggScheduleStyle.GENERATION_FIRST) {
          ContextRendezvous.publish(request.requestId(), ctxParams);
        }
      }
      String finish = finishReason(r);
      long created = System.currentTimeMillis() / 1000;
      TokenIds promptIds = ctxParams != null ? TokenIds.of(prompt) : null;
      if (body instanceof ChatCompletionRequest chat) {
        return new ChatCompletionResponse("chatcmpl-" + request.requestId(), "chat.completion", created, chat.model(),
            List.of(new ChatChoice(0, ChatMessage.of("assistant", text), null, finish, null, ctxParams, Map.of())),
            usage(r), promptIds, null, Map.of());
      }
      return new CompletionResponse("cmpl-" + request.requestId(), "text_completion", created, body.model(),
          List.of(new CompletionChoice(0, text, null, null, finish, null, ctxParams, Map.of())), usage(r), promptIds, Map.of());
    }

    void fail(WorkerFailure failure) {
      if (ended.compareAndSet(false, true)) {
        cancelTimer();
        listener.onError(failure);
      }
    }

    private void cancelTimer() {
      Runnable t = timeout;
      if (t != null) {
        t.run();
      }
    }

    void cancel() {
      onCancel.run();
      long eid = executorId.get();
      fail(new WorkerFailure(WorkerFailure.Kind.CANCELLED, 0, "cancelled", !firstChunk));
      if (eid > 0) {
        executor.cancel(eid);
      }
    }
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
