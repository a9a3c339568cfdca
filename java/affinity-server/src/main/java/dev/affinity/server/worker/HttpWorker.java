package dev.affinity.server.worker;

import com.fasterxml.jackson.databind.JsonNode;
import dev.affinity.executor.KvEvent;
import dev.affinity.executor.KvRetentionJson;
import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.InternalAuth;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.protocol.UsageInfo;
import dev.affinity.server.http.Transports;
import dev.affinity.tracing.TraceContext;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerCall;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerInfo;
import dev.affinity.worker.WorkerListener;
import dev.affinity.worker.WorkerReport;
import dev.affinity.worker.WorkerRequest;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseDecoder;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.resolver.NoopAddressResolverGroup;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.internal.ThreadExecutorMap;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
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
import javax.net.ssl.SSLException;
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
 *       Affinity worker process (visible ranks) also the router's rank hint ({@link WorkerExtensions}).
 *       Failures map to {@link WorkerFailure} kinds; the leg's {@code timeout} covers the whole exchange,
 *       body included, on the event loop's timer.
 *   <li>{@link #connect} reads {@code GET /server_info} ({@link #refreshInfo()} again later);
 *       {@link #checkHealth()} reads {@code GET /health} and updates {@link #isAlive()}.
 *   <li>{@link #startKvEventPolling}: the one poller of {@code POST /kv_cache_events}, feeding the sink
 *       registered with {@link #onKvEvents}.
 * </ul>
 *
 * <p>Threads: given the frontend's event loops ({@link #connect(HttpWorkerSettings, ProtocolCodec,
 * EventLoopGroup)}), a leg sent from one of them runs on that loop from the first byte written to the
 * last byte read, so a request and its two legs never change threads; sent from another thread, it runs
 * on the next loop. Listener calls run on the loop (or on the caller's thread for a call that ends at once):
 * do not block in them and do not {@link #close()} the worker from them. Nothing here blocks a loop; the
 * blocking calls ({@link #connect}, {@link #refreshInfo}, {@link #checkHealth}) refuse to run on one.
 *
 * <p>Size: over 350 lines because it is the whole of one worker's HTTP contract (legs, health, server
 * info, KV-event polling, the connections' pipeline) on one pool and one in-flight count; answers are read
 * by {@link LegExchange} and {@link ControlExchange}, streams split by {@link SseDecoder}, failures mapped
 * by {@link Failures}, and polling lives in {@link KvEventPoller}.
 */
public final class HttpWorker implements Worker {
  private static final Logger LOG = LoggerFactory.getLogger(HttpWorker.class);
  private static final String JSON = "application/json";
  /** Longest status line and headers of an answer (upstream's perf-metrics headers fit). */
  private static final int MAX_INITIAL_LINE = 8 * 1024;
  private static final int MAX_HEADER_SIZE = 64 * 1024;
  private static final int MAX_CHUNK_SIZE = 64 * 1024;

  private final HttpWorkerSettings settings;
  private final String id;
  private final String host;
  private final ProtocolCodec codec;
  private final EventLoopGroup loops;
  /** Whether the loops are this worker's own (shut down on close). */
  private final boolean ownLoops;
  private final ConnectionPool pool;
  private final ScheduledExecutorService scheduler;
  private final RequestSigner signer;
  /** Signs every POST with {@link LegAuth#HEADER}; null without a key. */
  private final LegAuth.Signer legSigner;
  private final KvEventPoller poller;
  private final Set<HttpCall> inFlight = ConcurrentHashMap.newKeySet();
  private final AtomicBoolean closed = new AtomicBoolean();
  private volatile WorkerInfo info = WorkerInfo.defaults();
  private volatile JsonNode serverInfo;
  private volatile boolean alive = true;

  private HttpWorker(HttpWorkerSettings settings, ProtocolCodec codec, EventLoopGroup loops, boolean ownLoops) {
    this.settings = settings;
    this.id = settings.workerId();
    this.host = settings.baseUrl().getHost() + ":" + settings.port();
    this.codec = codec;
    this.loops = loops;
    this.ownLoops = ownLoops;
    SslContext tls = tlsContext(settings);
    String hostName = settings.baseUrl().getHost();
    int port = settings.port();
    Bootstrap bootstrap = new Bootstrap()
        .group(loops)
        .channel(Transports.socketChannel(loops))
        .resolver(NoopAddressResolverGroup.INSTANCE) // resolved here, never on an event loop
        .remoteAddress(new InetSocketAddress(hostName, port))
        .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(Integer.MAX_VALUE, settings.connectTimeout().toMillis()))
        .option(ChannelOption.TCP_NODELAY, true)
        .option(ChannelOption.SO_KEEPALIVE, true);
    this.pool = new ConnectionPool(id, loops, bootstrap, settings.maxConnections(), settings.idleTimeout().toNanos());
    bootstrap.handler(new ChannelInitializer<SocketChannel>() {
      @Override
      protected void initChannel(SocketChannel ch) {
        if (tls != null) {
          ch.pipeline().addLast("tls", tls.newHandler(ch.alloc(), hostName, port));
        }
        // answers are decoded by Netty; requests are written as bytes (RequestTemplate#encode), so no encoder
        ch.pipeline().addLast("http", new HttpResponseDecoder(MAX_INITIAL_LINE, MAX_HEADER_SIZE, MAX_CHUNK_SIZE));
        ch.pipeline().addLast("exchange", new ExchangeHandler(pool));
      }
    });
    ScheduledThreadPoolExecutor timers = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "http-worker-" + id);
      t.setDaemon(true);
      return t;
    });
    timers.setRemoveOnCancelPolicy(true);
    this.scheduler = timers;
    InternalAuth auth = InternalAuth.ofNullable(settings.authKey()).orElse(null);
    this.signer = new RequestSigner(id, auth);
    this.legSigner = auth == null ? null : new LegAuth.Signer(auth, java.time.Clock.systemUTC());
    this.poller = new KvEventPoller(id, () -> control(HttpMethod.POST, "/kv_cache_events"), codec, scheduler);
  }

  private static SslContext tlsContext(HttpWorkerSettings settings) {
    if (!settings.tls()) {
      return null;
    }
    try {
      return SslContextBuilder.forClient().build(); // the JVM's default trust store
    } catch (SSLException e) {
      throw new IllegalStateException("cannot set up TLS for " + settings.baseUrl(), e);
    }
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

  @Override
  public boolean isAlive() {
    return alive && !closed.get();
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
    RequestTemplate http;
    try {
      List<RequestTemplate.Header> headers = new ArrayList<>(5);
      headers.add(new RequestTemplate.Header("content-type", JSON));
      String affinityId = null;
      for (RequestSigner.Header h : signer.headers(request)) {
        headers.add(new RequestTemplate.Header(h.name(), h.value()));
        if (h.name().equals(InternalAuth.SUBAGENT_AFFINITY_HEADER)) {
          affinityId = h.value();
        }
      }
      String hint = rankHint(request);
      if (hint != null) {
        headers.add(new RequestTemplate.Header(WorkerExtensions.RANK_HINT_HEADER, hint));
      }
      String retention = retention(request);
      if (retention != null) {
        headers.add(new RequestTemplate.Header(WorkerExtensions.KV_RETENTION_HEADER, retention));
      }
      TraceContext trace = request.trace();
      if (trace != null) { // W3C trace context: the worker's spans join the request's trace (docs/tracing.md)
        headers.add(new RequestTemplate.Header(TraceContext.TRACEPARENT, trace.traceparent()));
        if (trace.tracestate() != null) {
          headers.add(new RequestTemplate.Header(TraceContext.TRACESTATE, trace.tracestate()));
        }
      }
      byte[] json = codec.toJsonBytes(body);
      http = new RequestTemplate(HttpMethod.POST, settings.basePath() + body.path(), host, headers, json,
          legSignature(body.path(), json, hint, affinityId, retention));
    } catch (RuntimeException e) {
      call.fail(WorkerFailure.Kind.PROTOCOL, 0, "cannot build the request: " + e);
      return call;
    }
    Duration timeout = request.timeout();
    try {
      EventLoop loop = pool.loop();
      call.attachTimer(loop.schedule(
          () -> call.fail(WorkerFailure.Kind.TIMEOUT, 0, "no complete answer within " + timeout),
          Math.max(0, timeout.toNanos()), TimeUnit.NANOSECONDS));
      new LegExchange(call, http, pool, loop, codec, request.streaming(), body.isChat(),
          request.leg() != DisaggRequestType.CONTEXT_ONLY).start();
    } catch (RejectedExecutionException e) { // closed meanwhile
      call.fail(WorkerFailure.Kind.CONNECT, 0, "worker " + id + " is closed");
    }
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

  /**
   * The {@value WorkerExtensions#KV_RETENTION_HEADER} value: the leg's retention as JSON, sent only to an Affinity
   * worker process (ranks visible); a trtllm-serve worker's OpenAI protocol has no field for it, so it is left alone.
   */
  private String retention(WorkerRequest request) {
    return request.retention() == null || !info.ranksVisible() ? null : KvRetentionJson.toJson(request.retention());
  }

  /** What the worker reports it did: ctx_dp_rank, cached and prompt tokens (-1 where absent). */
  static WorkerReport report(UsageInfo usage, Integer rank) {
    int prompt = usage == null || usage.promptTokens() == null ? -1 : usage.promptTokens();
    int cached = usage == null || usage.promptTokensDetails() == null
        || usage.promptTokensDetails().cachedTokens() == null ? -1 : usage.promptTokensDetails().cachedTokens();
    return new WorkerReport(rank == null ? -1 : rank, cached, prompt, -1);
  }

  /**
   * The {@link LegAuth#HEADER} of a POST, computed at each write (null without a key): the path without the
   * base path, the exact body bytes, the rank hint and affinity id as sent, and the worker's name from its
   * {@code /server_info}. Sent to every worker; a trtllm-serve worker ignores it.
   */
  private java.util.function.Supplier<RequestTemplate.Header> legSignature(String path, byte[] body, String rankHint,
      String affinityId, String retention) {
    LegAuth.Signer s = legSigner;
    if (s == null) {
      return null;
    }
    return () -> new RequestTemplate.Header(LegAuth.HEADER,
        s.sign("POST", path, body, rankHint, affinityId, retention, workerName()));
  }

  /** The worker's name as its {@code /server_info} reports it ({@code affinity.name}), or null. */
  private String workerName() {
    JsonNode s = serverInfo;
    JsonNode name = s == null ? null : s.path(WorkerExtensions.SERVER_INFO_KEY).get("name");
    return name != null && name.isTextual() ? name.asText() : null;
  }


  /**
   * {@code POST /v1/messages/count_tokens} with an Anthropic Messages body, as upstream's frontend asks a context
   * worker (TensorRT-LLM {@code tensorrt_llm/serve/openai_disagg_service.py}, {@code anthropic_count_tokens}): no
   * disaggregated params, no router accounting, the control timeout. Completes with the worker's
   * {@code input_tokens}; fails with a {@link ProtocolException} carrying the worker's status and its error's
   * message (never the worker's address), or 502 when the answer cannot be read.
   */
  public CompletableFuture<Integer> countTokens(byte[] anthropicBody) {
    if (closed.get()) {
      return CompletableFuture.failedFuture(ProtocolException.of(503, "the context worker is closed", null));
    }
    RequestTemplate r = new RequestTemplate(HttpMethod.POST, settings.basePath() + "/v1/messages/count_tokens", host,
        List.of(new RequestTemplate.Header("content-type", JSON)), anthropicBody);
    return ControlExchange.send(r, pool, pool.loop(), settings.controlTimeout().toNanos()).handle((a, error) -> {
      if (error != null) {
        LOG.warn("worker {}: count_tokens failed: {}", id, error.toString());
        throw ProtocolException.of(502, "the context worker did not answer count_tokens", null);
      }
      JsonNode answer;
      try {
        answer = codec.readTree(a.body());
      } catch (ProtocolException e) {
        LOG.warn("worker {}: count_tokens answered {} with a body that is not JSON", id, a.status());
        throw ProtocolException.of(502, "the context worker answered count_tokens with status " + a.status()
            + " and a body that is not JSON", null);
      }
      if (a.status() == 200 && answer.path("input_tokens").canConvertToInt()) {
        return answer.get("input_tokens").asInt();
      }
      String message = answer.at("/error/message").isTextual() ? answer.at("/error/message").asText()
          : answer.path("message").isTextual() ? answer.get("message").asText()
          : "context worker rejected the request with status " + a.status();
      throw ProtocolException.of(a.status() >= 400 && a.status() <= 599 ? a.status() : 502, message, null);
    });
  }


  /**
   * {@code POST /_internal/tokenize} (TensorRT-LLM {@code tensorrt_llm/serve/openai_protocol.py},
   * {@code TokenizeRequest}): the worker's ids for {@code text}, with the control timeout. Fails when the worker
   * does not serve it (older releases answer 404) or answers something else than {@code {"tokens": [...]}}.
   */
  @Override
  public CompletableFuture<int[]> tokenize(String text) {
    if (closed.get()) {
      return CompletableFuture.failedFuture(new IllegalStateException("worker " + id + " is closed"));
    }
    byte[] body = codec.toJsonBytes(java.util.Map.of("prompt", text));
    RequestTemplate r = new RequestTemplate(HttpMethod.POST, settings.basePath() + "/_internal/tokenize", host,
        List.of(new RequestTemplate.Header("content-type", JSON)), body);
    return ControlExchange.send(r, pool, pool.loop(), settings.controlTimeout().toNanos()).thenApply(a -> {
      JsonNode tokens = a.status() == 200 ? codec.readTree(a.body()).get("tokens") : null;
      if (tokens == null || !tokens.isArray()) {
        throw new IllegalStateException("worker " + id + " answered /_internal/tokenize with status " + a.status()
            + (a.status() == 200 ? " and no tokens" : ""));
      }
      int[] ids = new int[tokens.size()];
      for (int i = 0; i < ids.length; i++) {
        ids[i] = tokens.get(i).asInt();
      }
      return ids;
    });
  }

  /** A control request with the control timeout; completes with the whole answer. POSTs are signed. */
  private CompletableFuture<ControlExchange.Answer> control(HttpMethod method, String path) {
    if (closed.get()) {
      return CompletableFuture.failedFuture(new IllegalStateException("worker " + id + " is closed"));
    }
    RequestTemplate r = method.equals(HttpMethod.POST)
        ? new RequestTemplate(method, settings.basePath() + path, host, List.of(), null,
            legSignature(path, null, null, null, null))
        : RequestTemplate.of(method, settings.basePath() + path, host);
    return ControlExchange.send(r, pool, pool.loop(), settings.controlTimeout().toNanos());
  }

  // ---- server info and health ----

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
      response = control(HttpMethod.GET, "/server_info").get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new WorkerSetupException(id, "interrupted while reading /server_info", e);
    } catch (ExecutionException e) {
      throw new WorkerSetupException(id, "cannot read /server_info: " + Failures.of(e), e.getCause());
    }
    if (response.status() != 200) {
      throw new WorkerSetupException(id, "/server_info answered HTTP " + response.status() + ": "
          + Failures.errorMessage(response.status(), response.body(), codec), null);
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
      LOG.info("worker {}: tokens_per_block={}, kv_cache_hash_algo={}, max_batch_size={}, max_num_tokens={}, ranks={}",
          id, parsed.tokensPerBlock(), parsed.hashAlgorithm().wireName(), parsed.maxBatchSize(), parsed.maxNumTokens(),
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
    return control(HttpMethod.GET, "/health").handle((response, error) -> {
      boolean ok = error == null && response.status() == 200;
      boolean was = alive;
      alive = ok;
      if (was != ok) {
        if (ok) {
          LOG.info("worker {}: healthy again", id);
        } else {
          LOG.warn("worker {}: unhealthy: {}", id,
              error != null ? Failures.of(error).message() : "HTTP " + response.status());
        }
      }
      return ok && !closed.get();
    });
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
   * delivered yet), closes every connection, and shuts down the worker's own event loop if it has one.
   * Idempotent. Later sends fail with CONNECT.
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
