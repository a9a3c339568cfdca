package dev.affinity.server.worker;

import com.fasterxml.jackson.databind.JsonNode;
import dev.affinity.executor.KvEvent;
import dev.affinity.protocol.InternalAuth;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.protocol.UsageInfo;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerCall;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerInfo;
import dev.affinity.worker.WorkerListener;
import dev.affinity.worker.WorkerReport;
import dev.affinity.worker.WorkerRequest;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
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
 * {@code /v1/chat/completions}, {@code /health}, {@code /server_info}, {@code /kv_cache_events}), with the
 * JDK {@link HttpClient} (HTTP/1.1, pooled keep-alive connections).
 *
 * <ul>
 *   <li>{@link #send}: {@code POST {url}{path}} with the compact JSON body; streaming legs read SSE and
 *       hand every chunk to the listener in order, non-streaming legs parse the JSON response. Internal
 *       auth headers as in docs/workers.md; to an Affinity worker process (visible ranks) also the
 *       router's rank hint ({@link WorkerExtensions}). Failures map to {@link WorkerFailure} kinds; the
 *       leg's {@code timeout} covers the whole exchange, body included.
 *   <li>{@link #connect} reads {@code GET /server_info} ({@link #refreshInfo()} again later);
 *       {@link #checkHealth()} reads {@code GET /health} and updates {@link #isAlive()}.
 *   <li>{@link #startKvEventPolling}: the one poller of {@code POST /kv_cache_events}, feeding the sink
 *       registered with {@link #onKvEvents}.
 * </ul>
 *
 * <p>Listener calls run on the HTTP client's threads (or the caller's, for a call that ends at once);
 * do not block in them and do not {@link #close()} the worker from them.
 *
 * <p>Size: over 350 lines because it is the whole of one worker's HTTP contract (legs, answer reading,
 * health, server info, KV-event polling) on one shared client and one in-flight count; the reading of
 * answers ({@link HttpCall}, {@link SseStream}, {@link Failures}) and the polling ({@link KvEventPoller})
 * already live apart.
 */
public final class HttpWorker implements Worker {
  private static final Logger LOG = LoggerFactory.getLogger(HttpWorker.class);
  private static final String JSON = "application/json";
  private static final String EVENT_STREAM = "text/event-stream";

  private final HttpWorkerSettings settings;
  private final String id;
  private final ProtocolCodec codec;
  private final HttpClient client;
  private final ScheduledExecutorService scheduler;
  private final RequestSigner signer;
  private final KvEventPoller poller;
  private final Set<HttpCall> inFlight = ConcurrentHashMap.newKeySet();
  private final AtomicBoolean closed = new AtomicBoolean();
  private volatile WorkerInfo info = WorkerInfo.defaults();
  private volatile JsonNode serverInfo;
  private volatile boolean alive = true;

  private HttpWorker(HttpWorkerSettings settings, ProtocolCodec codec) {
    this.settings = settings;
    this.id = settings.workerId();
    this.codec = codec;
    this.client = HttpClient.newBuilder()
        .version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(settings.connectTimeout())
        .followRedirects(HttpClient.Redirect.NEVER)
        .build();
    ScheduledThreadPoolExecutor timers = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "http-worker-" + id);
      t.setDaemon(true);
      return t;
    });
    timers.setRemoveOnCancelPolicy(true);
    this.scheduler = timers;
    this.signer = new RequestSigner(id, InternalAuth.ofNullable(settings.authKey()).orElse(null));
    this.poller = new KvEventPoller(id, client, uri("/kv_cache_events"), settings.controlTimeout(), codec,
        scheduler);
  }

  /**
   * A worker ready for routing: its {@code /server_info} has been read and adopted.
   *
   * @throws WorkerSetupException when {@code /server_info} cannot be read or is unusable (an unknown
   *     {@code kv_cache_hash_algo}); the worker must not be added
   */
  public static HttpWorker connect(HttpWorkerSettings settings, ProtocolCodec codec) throws WorkerSetupException {
    HttpWorker w = new HttpWorker(Objects.requireNonNull(settings, "settings"), Objects.requireNonNull(codec, "codec"));
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

  @Override
  public boolean isAlive() {
    return alive && !closed.get();
  }

  /** Calls in flight. */
  public int inFlight() {
    return inFlight.size();
  }

  // ---- requests ----

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
    OpenAiRequest body = request.body();
    boolean streaming = request.streaming();
    HttpRequest httpRequest;
    try {
      HttpRequest.Builder b = HttpRequest.newBuilder(uri(body.path()))
          .header("Content-Type", JSON)
          .POST(HttpRequest.BodyPublishers.ofByteArray(codec.toJsonBytes(body)));
      for (RequestSigner.Header h : signer.headers(request)) {
        b.header(h.name(), h.value());
      }
      String hint = rankHint(request);
      if (hint != null) {
        b.header(WorkerExtensions.RANK_HINT_HEADER, hint);
      }
      httpRequest = b.build();
    } catch (RuntimeException e) {
      call.fail(WorkerFailure.Kind.PROTOCOL, 0, "cannot build the request: " + e);
      return call;
    }
    Duration timeout = request.timeout();
    CompletableFuture<HttpResponse<byte[]>> exchange;
    try {
      call.attachTimer(scheduler.schedule(
          () -> call.fail(WorkerFailure.Kind.TIMEOUT, 0, "no complete answer within " + timeout),
          Math.max(0, timeout.toNanos()), TimeUnit.NANOSECONDS));
      exchange = client.sendAsync(httpRequest, info -> bodyFor(info, call, streaming, body.isChat()));
    } catch (RejectedExecutionException e) { // closed meanwhile
      call.fail(WorkerFailure.Kind.CONNECT, 0, "worker " + id + " is closed");
      return call;
    } catch (RuntimeException e) {
      call.fail(Failures.of(e));
      return call;
    }
    call.attachExchange(exchange);
    exchange.whenComplete((response, error) -> finish(call, response, error, streaming, body.isChat()));
    return call;
  }

  /**
   * The {@value WorkerExtensions#RANK_HINT_HEADER} value: the router's rank, sent only to a worker whose
   * ranks are visible (an Affinity worker process; a trtllm-serve worker picks its rank itself).
   */
  private String rankHint(WorkerRequest request) {
    WorkerInfo current = info;
    int rank = request.rankHint();
    if (rank < 0 || !current.ranksVisible()) {
      return null;
    }
    if (rank >= current.numRanks()) {
      LOG.debug("worker {}: rank hint {} is outside its {} ranks; not sent", id, rank, current.numRanks());
      return null;
    }
    return Integer.toString(rank);
  }

  /** Chooses how to read the answer once its status and headers are known. */
  private HttpResponse.BodySubscriber<byte[]> bodyFor(HttpResponse.ResponseInfo info, HttpCall call,
      boolean streaming, boolean chat) {
    int status = info.statusCode();
    if (status < 200 || status >= 300) {
      return HttpResponse.BodySubscribers.ofByteArray(); // the error text
    }
    String type = info.headers().firstValue("content-type").orElse("").toLowerCase(Locale.ROOT);
    boolean eventStream = type.contains(EVENT_STREAM);
    if (streaming) {
      if (!type.isEmpty() && !eventStream) {
        call.fail(WorkerFailure.Kind.PROTOCOL, status,
            "expected " + EVENT_STREAM + " for a streaming request, got " + type);
        return new Discard();
      }
      return HttpResponse.BodySubscribers.fromLineSubscriber(new SseStream(call, codec, chat), s -> null,
          StandardCharsets.UTF_8, null);
    }
    if (eventStream) {
      call.fail(WorkerFailure.Kind.PROTOCOL, status, "received an event stream although the request is not streaming");
      return new Discard();
    }
    return HttpResponse.BodySubscribers.ofByteArray();
  }

  private void finish(HttpCall call, HttpResponse<byte[]> response, Throwable error, boolean streaming,
      boolean chat) {
    if (call.isEnded()) {
      return;
    }
    if (error != null) {
      call.fail(Failures.of(error));
      return;
    }
    int status = response.statusCode();
    if (status < 200 || status >= 300) {
      call.fail(Failures.ofStatus(status, response.body(), codec));
      return;
    }
    if (streaming) { // SseStream ends the call; this is a safety net
      call.fail(WorkerFailure.Kind.RESET, status, "the stream ended before data: [DONE]");
      return;
    }
    OpenAiResponse parsed;
    try {
      byte[] bytes = response.body();
      parsed = chat ? codec.parseChatCompletionResponse(bytes) : codec.parseCompletionResponse(bytes);
    } catch (ProtocolException e) {
      call.fail(WorkerFailure.Kind.PROTOCOL, status, "unparsable response: " + e.getMessage());
      return;
    }
    Integer rank = parsed.firstDisaggregatedParams().map(p -> p.ctxDpRank()).orElse(null);
    call.complete(parsed, report(parsed.usage(), rank));
  }

  /** What the worker reports it did: ctx_dp_rank, cached and prompt tokens (-1 where absent). */
  static WorkerReport report(UsageInfo usage, Integer rank) {
    int prompt = usage == null || usage.promptTokens() == null ? -1 : usage.promptTokens();
    int cached = usage == null || usage.promptTokensDetails() == null
        || usage.promptTokensDetails().cachedTokens() == null ? -1 : usage.promptTokensDetails().cachedTokens();
    return new WorkerReport(rank == null ? -1 : rank, cached, prompt, -1);
  }

  // ---- server info and health ----

  /**
   * Reads {@code GET /server_info} again and adopts {@code tokens_per_block}, {@code kv_cache_hash_algo},
   * {@code max_batch_size} and Affinity's rank extension ({@link WorkerExtensions}); on failure the
   * previous info stays.
   *
   * @throws WorkerSetupException naming the worker and the problem
   */
  public WorkerInfo refreshInfo() throws WorkerSetupException {
    HttpResponse<byte[]> response;
    try {
      response = client.sendAsync(HttpRequest.newBuilder(uri("/server_info")).timeout(settings.controlTimeout())
          .GET().build(), HttpResponse.BodyHandlers.ofByteArray()).get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new WorkerSetupException(id, "interrupted while reading /server_info", e);
    } catch (ExecutionException e) {
      throw new WorkerSetupException(id, "cannot read /server_info: " + Failures.of(e), e.getCause());
    }
    if (response.statusCode() != 200) {
      throw new WorkerSetupException(id, "/server_info answered HTTP " + response.statusCode() + ": "
          + Failures.errorMessage(response.statusCode(), response.body(), codec), null);
    }
    JsonNode root;
    try {
      root = codec.readTree(response.body());
    } catch (ProtocolException e) {
      throw new WorkerSetupException(id, "/server_info is not JSON: " + e.getMessage(), e);
    }
    WorkerInfo parsed = ServerInfos.parse(id, root);
    serverInfo = root;
    if (!parsed.equals(info)) {
      LOG.info("worker {}: tokens_per_block={}, kv_cache_hash_algo={}, max_batch_size={}, ranks={}", id,
          parsed.tokensPerBlock(), parsed.hashAlgorithm().wireName(), parsed.maxBatchSize(),
          parsed.ranksVisible() ? parsed.numRanks() + " visible" : "chosen by the worker");
    }
    info = parsed;
    return parsed;
  }

  /** {@code GET /health} once: 200 → alive, anything else (or no answer) → dead. Completes with the new state. */
  public CompletableFuture<Boolean> checkHealthAsync() {
    if (closed.get()) {
      return CompletableFuture.completedFuture(false);
    }
    HttpRequest request = HttpRequest.newBuilder(uri("/health")).timeout(settings.controlTimeout()).GET().build();
    return client.sendAsync(request, HttpResponse.BodyHandlers.discarding()).handle((response, error) -> {
      boolean ok = error == null && response.statusCode() == 200;
      boolean was = alive;
      alive = ok;
      if (was != ok) {
        if (ok) {
          LOG.info("worker {}: healthy again", id);
        } else {
          LOG.warn("worker {}: unhealthy: {}", id,
              error != null ? Failures.of(error).message() : "HTTP " + response.statusCode());
        }
      }
      return ok && !closed.get();
    });
  }

  /** {@link #checkHealthAsync()}, waiting for the answer; run it periodically to keep {@link #isAlive()} current. */
  public boolean checkHealth() {
    try {
      return checkHealthAsync().get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return isAlive();
    } catch (ExecutionException e) {
      return isAlive();
    }
  }

  // ---- KV events ----

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

  // ---- lifecycle ----

  /**
   * Stops the poller, ends calls in flight with RESET ("worker closed"; retryable when nothing was
   * delivered yet) and releases the HTTP client. Idempotent. Later sends fail with CONNECT.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    alive = false;
    poller.close();
    for (HttpCall call : inFlight.toArray(new HttpCall[0])) {
      call.fail(WorkerFailure.Kind.RESET, 0, "worker " + id + " closed");
    }
    scheduler.shutdownNow();
    if (client instanceof AutoCloseable closeable) { // JDK 21+: release the connections now
      try {
        closeable.close();
      } catch (Exception e) {
        LOG.debug("worker {}: closing the HTTP client", id, e);
      }
    }
    LOG.debug("worker {}: closed", id);
  }

  @Override
  public String toString() {
    return "HttpWorker[" + id + "]";
  }

  private URI uri(String path) {
    return URI.create(settings.baseUrl() + path);
  }

  /** Cancels the body at once: the call has already failed. */
  private static final class Discard implements HttpResponse.BodySubscriber<byte[]> {
    private final CompletableFuture<byte[]> body = CompletableFuture.completedFuture(null);

    @Override
    public CompletableFuture<byte[]> getBody() {
      return body;
    }

    @Override
    public void onSubscribe(Flow.Subscription subscription) {
      subscription.cancel();
    }

    @Override
    public void onNext(List<ByteBuffer> item) {}

    @Override
    public void onError(Throwable throwable) {}

    @Override
    public void onComplete() {}
  }
}
