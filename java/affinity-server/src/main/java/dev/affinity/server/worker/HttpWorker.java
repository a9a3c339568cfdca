package dev.affinity.server.worker;

import com.fasterxml.jackson.databind.JsonNode;
import dev.affinity.executor.KvEvent;
import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.protocol.SentPrompt;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerCall;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerInfo;
import dev.affinity.worker.WorkerListener;
import dev.affinity.worker.WorkerRequest;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.internal.ThreadExecutorMap;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@code trtllm-serve} worker, or an Affinity worker process, over its HTTP wire contract (the
 * endpoints of TensorRT-LLM's {@code tensorrt_llm/serve/openai_server.py}: {@code /v1/completions},
 * {@code /v1/chat/completions}, {@code /health}, {@code /server_info}, {@code /kv_cache_events}), on a
 * Netty HTTP/1.1 client with pooled keep-alive connections ({@link ConnectionPool}).
 *
 * <ul>
 *   <li>{@link #send}: {@code POST {url}{path}} with the compact JSON body; streaming legs read SSE and
 *       hand every chunk to the listener in order as the worker's bytes ({@link LegExchange}),
 *       non-streaming legs parse the JSON response. Internal auth headers as in docs/workers.md; to an
 *       Affinity worker process (visible ranks) also the router's rank hint ({@link WorkerExtensions}), and to one
 *       that takes it a completion's KV cache salt; a completion whose salt the worker cannot take (a stock
 *       worker under {@code tenant_isolation}) is sent as it is, and its answer's {@code cached_tokens} read 0, so
 *       that a tenant's usage never tells what another tenant cached.
 *       Failures map to {@link WorkerFailure} kinds; the leg's {@code timeout} covers the whole exchange,
 *       body included, on the event loop's timer.
 *   <li>{@link #connect} reads {@code GET /server_info} ({@link #refreshInfo()} again later);
 *       {@link #checkHealth()} reads {@code GET /health} and updates {@link #isAlive()}.
 *   <li>{@link #startKvEventPolling}: the one poller of {@code POST /kv_cache_events}, feeding the sink
 *       registered with {@link #onKvEvents}.
 *   <li>{@link #releaseContext}: a held context the frontend will never send on is released on an Affinity worker
 *       process ({@code POST /release_context}, signed), asynchronously.
 * </ul>
 *
 * <p>Threads: given the frontend's event loops ({@link #connect(HttpWorkerSettings, ProtocolCodec,
 * EventLoopGroup)}), a leg sent from one of them runs on that loop from the first byte written to the
 * last byte read, so a request and its two legs never change threads; sent from another thread, it runs
 * on the next loop. Listener calls run on the loop (or on the caller's thread for a call that ends at once):
 * do not block in them and do not {@link #close()} the worker from them. Nothing here blocks a loop; the
 * blocking calls ({@link #connect}, {@link #refreshInfo}, {@link #checkHealth}) refuse to run on one.
 *
 * <p>Requests are built by {@link LegRequests}, connections pooled by {@link ConnectionPool}
 * ({@link WorkerConnections}), answers read by {@link LegExchange} and {@link ControlExchange} (control answers
 * by {@link ControlAnswers}), streams split by {@link SseDecoder}, failures mapped by {@link Failures}, and
 * polling lives in {@link KvEventPoller}.
 */
public final class HttpWorker implements Worker {
  private static final Logger LOG = LoggerFactory.getLogger(HttpWorker.class);

  private final HttpWorkerSettings settings;
  private final String id;
  private final ProtocolCodec codec;
  private final EventLoopGroup loops;
  /** Whether the loops are this worker's own (shut down on close). */
  private final boolean ownLoops;
  private final ConnectionPool pool;
  private final ScheduledExecutorService scheduler;
  private final LegRequests requests;
  private final KvEventPoller poller;
  private final Set<HttpCall> inFlight = ConcurrentHashMap.newKeySet();
  private final AtomicBoolean closed = new AtomicBoolean();
  private volatile WorkerInfo info = WorkerInfo.defaults();
  private volatile JsonNode serverInfo;
  private volatile WorkerFeatures features = WorkerFeatures.NONE;
  private final AtomicBoolean warnedUnsalted = new AtomicBoolean();
  private final WorkerControl control;

  private HttpWorker(HttpWorkerSettings settings, ProtocolCodec codec, EventLoopGroup loops, boolean ownLoops) {
    this.settings = settings;
    this.id = settings.workerId();
    this.codec = codec;
    this.loops = loops;
    this.ownLoops = ownLoops;
    this.pool = WorkerConnections.pool(settings, loops);
    ScheduledThreadPoolExecutor timers = new ScheduledThreadPoolExecutor(1, r -> daemon(r, "http-worker-" + id));
    timers.setRemoveOnCancelPolicy(true);
    this.scheduler = timers;
    this.requests = new LegRequests(settings, settings.baseUrl().getHost() + ":" + settings.port(), codec, () -> info,
        () -> serverInfo, () -> features);
    this.control = new WorkerControl(id, codec, pool, requests, settings.controlTimeout().toNanos(), closed::get);
    this.poller = new KvEventPoller(id, () -> control.send(HttpMethod.POST, "/kv_cache_events"), codec, scheduler);
  }

  private static Thread daemon(Runnable r, String name) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    return t;
  }

  /**
   * A worker ready for routing, with event loops of its own (one thread): its {@code /server_info} has
   * been read and adopted. A frontend passes its own loops instead ({@link #connect(HttpWorkerSettings,
   * ProtocolCodec, EventLoopGroup)}).
   *
   * @throws WorkerSetupException when {@code /server_info} cannot be read or is unusable (an unknown
   *     {@code kv_cache_hash_algo}); the worker must not be added
   */
  public static HttpWorker connect(HttpWorkerSettings settings, ProtocolCodec codec) throws WorkerSetupException {
    Objects.requireNonNull(settings, "settings");
    EventLoopGroup own = new MultiThreadIoEventLoopGroup(1,
        new DefaultThreadFactory("http-worker-io-" + settings.workerId(), true), NioIoHandler.newFactory());
    return connect(settings, codec, own, true);
  }

  /**
   * A worker whose connections live on {@code loops} (the frontend's event loops, so that a request and
   * its legs stay on one thread); the caller shuts the loops down after closing the worker.
   *
   * @throws WorkerSetupException as {@link #connect(HttpWorkerSettings, ProtocolCodec)}
   */
  public static HttpWorker connect(HttpWorkerSettings settings, ProtocolCodec codec, EventLoopGroup loops)
      throws WorkerSetupException {
    return connect(settings, codec, Objects.requireNonNull(loops, "loops"), false);
  }

  private static HttpWorker connect(HttpWorkerSettings settings, ProtocolCodec codec, EventLoopGroup loops,
      boolean ownLoops) throws WorkerSetupException {
    HttpWorker w;
    try {
      w = new HttpWorker(Objects.requireNonNull(settings, "settings"), Objects.requireNonNull(codec, "codec"), loops,
          ownLoops);
    } catch (RuntimeException e) {
      if (ownLoops) {
        loops.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      }
      throw e;
    }
    try {
      w.refreshInfo();
    } catch (WorkerSetupException | RuntimeException e) {
      w.close();
      throw e;
    }
    return w;
  }

  @Override
  public String id() {
    return id;
  }

  @Override
  public WorkerInfo info() {
    return info;
  }

  /** The settings this worker was connected with. */
  public HttpWorkerSettings settings() {
    return settings;
  }

  /** The last {@code /server_info} answer, as a copy (e.g. its {@code disaggregated_params} for generation-first). */
  public JsonNode serverInfo() {
    JsonNode s = serverInfo;
    return s == null ? null : s.deepCopy();
  }

  /** What the worker takes beyond trtllm-serve's contract, from its last {@code /server_info}. */
  public WorkerFeatures features() {
    return features;
  }

  @Override
  public boolean isAlive() {
    return control.healthy() && !closed.get();
  }

  /** Calls in flight. */
  public int inFlight() {
    return inFlight.size();
  }

  /** Connections to the worker open now (in use, idle in the pool, or being opened). */
  public int openConnections() {
    return pool.open();
  }

  /** Connections idle in the pool, ready for the next request. */
  public int idleConnections() {
    return pool.idle();
  }

  @Override
  public WorkerCall send(WorkerRequest request, WorkerListener listener) {
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(listener, "listener");
    HttpCall call = new HttpCall(id, listener, inFlight::remove);
    if (closed.get()) {
      call.fail(WorkerFailure.Kind.CONNECT, 0, "worker " + id + " is closed");
      return call;
    }
    inFlight.add(call);
    if (closed.get()) { // closed meanwhile: close() may have missed it
      call.fail(WorkerFailure.Kind.CONNECT, 0, "worker " + id + " is closed");
      return call;
    }
    RequestTemplate http;
    try {
      http = requests.leg(request);
    } catch (RuntimeException e) {
      call.fail(WorkerFailure.Kind.PROTOCOL, 0, "cannot build the request: " + e);
      return call;
    }
    boolean saltMissed = requests.saltMissed(request);
    if (saltMissed && warnedUnsalted.compareAndSet(false, true)) {
      LOG.warn("worker {}: completions with a KV cache salt (tenant_isolation) reach it unsalted: it does not take a "
          + "completion's salt (a stock trtllm-serve worker), so tenants share its cache for completions; their usage "
          + "reports 0 cached tokens (logged once)", id);
    }
    Duration timeout = request.timeout();
    try {
      EventLoop loop = pool.loop();
      call.attachTimer(loop.schedule(
          () -> call.fail(WorkerFailure.Kind.TIMEOUT, 0, "no complete answer within " + timeout),
          Math.max(0, timeout.toNanos()), TimeUnit.NANOSECONDS));
      new LegExchange(call, http, pool, loop, codec, request.streaming(), request.body().isChat(),
          request.leg() != DisaggRequestType.CONTEXT_ONLY, saltMissed, SentPrompt.of(request.body())).start();
    } catch (RejectedExecutionException e) { // closed meanwhile
      call.fail(WorkerFailure.Kind.CONNECT, 0, "worker " + id + " is closed");
    }
    return call;
  }

  /**
   * Releases a context this worker holds for a generation leg that will never come (the generation failed or cannot
   * be sent, the client left): {@code POST /release_context {"ctx_request_ids": [n]}}, signed as a generation
   * worker's release is ({@link LegRequests#releaseContext}), so its KV is freed now instead of on the worker's hold
   * timeout. Only to a worker that reports it serves the release ({@link WorkerFeatures#releaseContext()}: an
   * Affinity worker process); a stock trtllm-serve worker frees the context on its own timeout. Returns at once
   * ({@link WorkerControl#release}: a failure is logged, never thrown; the hold timeout stays the backstop).
   */
  @Override
  public void releaseContext(DisaggregatedParams contextParams) {
    Long ctxRequestId = contextParams == null ? null : contextParams.ctxRequestId();
    if (ctxRequestId == null || closed.get() || !features.releaseContext()) {
      return;
    }
    control.release(ctxRequestId);
  }

  /**
   * {@code POST /v1/messages/count_tokens} with an Anthropic Messages body, as upstream's frontend asks a context
   * worker (TensorRT-LLM {@code tensorrt_llm/serve/openai_disagg_service.py}, {@code anthropic_count_tokens}): no
   * disaggregated params, no router accounting, the control timeout. Completes with the worker's
   * {@code input_tokens}; fails with a {@link ProtocolException} carrying the worker's status and its error's
   * message (never the worker's address), or 502 when the answer cannot be read.
   */
  public CompletableFuture<Integer> countTokens(byte[] anthropicBody) {
    return control.countTokens(anthropicBody);
  }

  /**
   * {@code POST /_internal/tokenize} (TensorRT-LLM {@code tensorrt_llm/serve/openai_protocol.py},
   * {@code TokenizeRequest}): the worker's ids for {@code text}, with the control timeout. Fails when the worker
   * does not serve it (older releases answer 404) or answers something else than {@code {"tokens": [...]}}.
   */
  @Override
  public CompletableFuture<int[]> tokenize(String text) {
    return control.tokenize(text);
  }

  /**
   * Reads {@code GET /server_info} again and adopts {@code tokens_per_block}, {@code kv_cache_hash_algo},
   * {@code max_batch_size} and Affinity's rank extension ({@link WorkerExtensions}); on failure the
   * previous info stays. Blocks: never call it on an event loop.
   *
   * @throws WorkerSetupException naming the worker and the problem
   */
  public WorkerInfo refreshInfo() throws WorkerSetupException {
    notOnEventLoop("refreshInfo");
    ControlExchange.Answer response;
    try {
      response = control.send(HttpMethod.GET, "/server_info").get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new WorkerSetupException(id, "interrupted while reading /server_info", e);
    } catch (ExecutionException e) {
      throw new WorkerSetupException(id, "cannot read /server_info: " + Failures.of(e), e.getCause());
    }
    JsonNode root = ServerInfos.body(id, response, codec);
    WorkerInfo parsed = ServerInfos.parse(id, root);
    serverInfo = root;
    features = WorkerFeatures.of(root);
    if (!parsed.equals(info)) {
      LOG.info("worker {}: tokens_per_block={}, kv_cache_hash_algo={}, max_batch_size={}, max_num_tokens={}, ranks={}",
          id, parsed.tokensPerBlock(), parsed.hashAlgorithm().wireName(), parsed.maxBatchSize(), parsed.maxNumTokens(),
          parsed.ranksVisible() ? parsed.numRanks() + " visible" : "chosen by the worker");
    }
    info = parsed;
    return parsed;
  }

  /** {@code GET /health} once: 200 → alive, anything else (or no answer) → dead. Completes with the new state. */
  public CompletableFuture<Boolean> checkHealthAsync() {
    return control.checkHealth();
  }

  /**
   * {@link #checkHealthAsync()}, waiting for the answer; run it periodically to keep {@link #isAlive()}
   * current. Blocks: never call it on an event loop.
   */
  public boolean checkHealth() {
    notOnEventLoop("checkHealth");
    try {
      return checkHealthAsync().get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return isAlive();
    } catch (ExecutionException e) {
      return isAlive();
    }
  }

  private static void notOnEventLoop(String what) {
    if (ThreadExecutorMap.currentExecutor() != null) {
      throw new IllegalStateException(what + " blocks and must not run on an event loop");
    }
  }

  @Override
  public void onKvEvents(Consumer<List<KvEvent>> sink) {
    poller.sink(sink);
  }

  /** Starts (or restarts with a new interval) the one poller of {@code POST /kv_cache_events}. */
  public void startKvEventPolling(Duration interval) {
    poller.start(interval);
  }

  public void stopKvEventPolling() {
    poller.stop();
  }

  public boolean isKvEventPolling() {
    return poller.isPolling();
  }

  /**
   * Polls {@code /kv_cache_events} now (or joins the poll in flight; nothing without a sink); completes
   * with the number of events handed to the sink.
   */
  public CompletableFuture<Integer> pollKvEvents() {
    return poller.poll();
  }

  /**
   * Stops the poller, ends calls in flight with RESET ("worker closed"; retryable when nothing was
   * delivered yet), closes every connection, and shuts down the worker's own event loop if it has one.
   * Idempotent. Later sends fail with CONNECT.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    control.closed();
    poller.close();
    for (HttpCall call : inFlight.toArray(new HttpCall[0])) {
      call.fail(WorkerFailure.Kind.RESET, 0, "worker " + id + " closed");
    }
    pool.close();
    scheduler.shutdownNow();
    if (ownLoops) {
      loops.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    }
    LOG.debug("worker {}: closed", id);
  }

  @Override
  public String toString() {
    return "HttpWorker[" + id + "]";
  }
}
