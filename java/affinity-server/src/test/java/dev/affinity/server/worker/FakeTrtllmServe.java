package dev.affinity.server.worker;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A stand-in for a stock {@code trtllm-serve} worker (tensorrt_llm/serve/openai_server.py): {@code GET /server_info},
 * {@code GET /health}, {@code POST /kv_cache_events} (drains what is queued), {@code GET /v1/models},
 * {@code GET} and {@code POST /steady_clock_offset}, {@code POST /v1/completions}
 * and {@code POST /v1/chat/completions} answering context-only legs with {@code prompt_token_ids} and
 * {@code choices[0].disaggregated_params}, other legs as JSON or as SSE ({@code data: ...}, then
 * {@code data: [DONE]}). Records every request with its headers. Completion requests follow queued
 * {@link Behavior}s (default: answer normally): fail with a status, close the connection before or in
 * the middle of the answer, stall, or answer in the wrong shape.
 */
final class FakeTrtllmServe implements AutoCloseable {
  static final ObjectMapper JSON = new ObjectMapper();
  static final int CTX_DP_RANK = 3;
  static final int PROMPT_TOKENS = 4;
  static final int CACHED_TOKENS = 2;
  static final String OPAQUE_STATE = "AAEC";
  /** The context answer's ids 1..{@value #PROMPT_TOKENS} as base64 int32 little-endian, when asked for them so. */
  static final String PROMPT_IDS_B64 = "AQAAAAIAAAADAAAABAAAAA==";
  /** What {@code GET /v1/models} names, as a stock worker names the model it loaded. */
  static final String MODEL = "TinyLlama/TinyLlama-1.1B-Chat-v1.0";

  /** One request as received; header names are lower-case; {@code remotePort} tells connections apart. */
  record Received(String method, String path, Map<String, String> headers, byte[] body, int remotePort) {
    String header(String name) {
      return headers.get(name.toLowerCase(Locale.ROOT));
    }

    JsonNode json() {
      try {
        return JSON.readTree(body);
      } catch (IOException e) {
        throw new AssertionError("body is not JSON: " + new String(body, StandardCharsets.UTF_8), e);
      }
    }
  }

  /** How to answer the next completion request. */
  record Behavior(Kind kind, int chunks, int status, String body) {
    enum Kind { OK, STATUS, CLOSE_AFTER, STALL_AFTER, SSE_FOR_NON_STREAM, JSON_FOR_STREAM, RAW, BULK }

    static Behavior ok() {
      return new Behavior(Kind.OK, 0, 200, null);
    }

    /** Answers {@code status} with {@code body} (application/json). */
    static Behavior status(int status, String body) {
      return new Behavior(Kind.STATUS, 0, status, body);
    }

    /** Closes the connection after {@code chunks} SSE events (0: before any answer, also for JSON requests). */
    static Behavior closeAfter(int chunks) {
      return new Behavior(Kind.CLOSE_AFTER, chunks, 200, null);
    }

    /** Stalls after {@code chunks} SSE events (0: before any answer) until the server is closed. */
    static Behavior stallAfter(int chunks) {
      return new Behavior(Kind.STALL_AFTER, chunks, 200, null);
    }

    static Behavior sseForNonStream() {
      return new Behavior(Kind.SSE_FOR_NON_STREAM, 0, 200, null);
    }

    static Behavior jsonForStream() {
      return new Behavior(Kind.JSON_FOR_STREAM, 0, 200, null);
    }

    /**
     * Streams {@code chunks} completion chunks of about {@code bytes} bytes each as fast as the connection
     * takes them (no flush per chunk), then {@code [DONE]}; {@link #bulkBytesWritten()} counts what went out.
     */
    static Behavior bulk(int chunks, int bytes) {
      return new Behavior(Kind.BULK, chunks, bytes, null);
    }

    /** Answers 200 with this exact body and content type {@code text/event-stream} or {@code application/json}. */
    static Behavior raw(String contentType, String body) {
      return new Behavior(Kind.RAW, 0, 200, contentType + "\u0000" + body);
    }
  }

  private final HttpServer server;
  private final ExecutorService pool;
  private final CountDownLatch release = new CountDownLatch(1);
  private final List<Received> received = new CopyOnWriteArrayList<>();
  private final ConcurrentLinkedQueue<Behavior> behaviors = new ConcurrentLinkedQueue<>();
  private final ConcurrentLinkedQueue<String> kvEvents = new ConcurrentLinkedQueue<>();
  private final ConcurrentLinkedQueue<String> kvRawBodies = new ConcurrentLinkedQueue<>();
  private final AtomicInteger kvPolls = new AtomicInteger();
  private final java.util.concurrent.atomic.AtomicLong bulkBytes = new java.util.concurrent.atomic.AtomicLong();
  private final AtomicInteger ctxIds = new AtomicInteger(1000);
  private volatile ObjectNode serverInfo;
  private volatile int serverInfoStatus = 200;
  private volatile int healthStatus = 200;
  private volatile int streamChunks = 5;
  private volatile boolean closeConnections;
  private final Object arrivals = new Object();

  private FakeTrtllmServe() throws IOException {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    pool = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "fake-trtllm-serve");
      t.setDaemon(true);
      return t;
    });
    server.setExecutor(pool);
    serverInfo = JSON.createObjectNode()
        .put("kv_cache_hash_algo", "v2_sha256_64")
        .put("tokens_per_block", 64)
        .put("max_batch_size", 128)
        .put("render_fingerprint", "fp-1");
    ObjectNode dp = serverInfo.putObject("disaggregated_params");
    dp.putArray("ctx_info_endpoint").add("tcp://10.0.0.5:5555");
    dp.put("server_role", "CONTEXT");
    server.createContext("/", this::handle);
    server.start();
  }

  static FakeTrtllmServe start() throws IOException {
    return new FakeTrtllmServe();
  }

  String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  int port() {
    return server.getAddress().getPort();
  }

  // ---- configuration ----

  void serverInfo(ObjectNode info) {
    serverInfo = info;
  }

  ObjectNode serverInfo() {
    return serverInfo.deepCopy();
  }

  void serverInfoStatus(int status) {
    serverInfoStatus = status;
  }

  void healthStatus(int status) {
    healthStatus = status;
  }

  void streamChunks(int n) {
    streamChunks = n;
  }

  /** Answers with {@code Connection: close}, so the client keeps no idle connection to this server. */
  void closeConnections(boolean close) {
    closeConnections = close;
  }

  void enqueue(Behavior b) {
    behaviors.add(b);
  }

  /** Queues KV events (JSON objects) for the next {@code /kv_cache_events} drain. */
  void addKvEvents(String... events) {
    kvEvents.addAll(List.of(events));
  }

  /** The next {@code /kv_cache_events} poll answers 200 with this raw body (events stay queued). */
  void nextKvBody(String body) {
    kvRawBodies.add(body);
  }

  int kvPolls() {
    return kvPolls.get();
  }

  /** Bytes the {@link Behavior#bulk} streams have written so far. */
  long bulkBytesWritten() {
    return bulkBytes.get();
  }

  int pendingKvEvents() {
    return kvEvents.size();
  }

  // ---- recording ----

  List<Received> received() {
    return new ArrayList<>(received);
  }

  List<Received> received(String path) {
    return received.stream().filter(r -> r.path().equals(path)).toList();
  }

  /** Waits until {@code count} requests to {@code path} have arrived (bounded, for a broken build). */
  void awaitReceived(String path, int count) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    synchronized (arrivals) {
      while (received(path).size() < count) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          throw new AssertionError(count + " requests to " + path + " expected; got " + received(path).size());
        }
        arrivals.wait(TimeUnit.NANOSECONDS.toMillis(left) + 1);
      }
    }
  }

  Received last(String path) {
    List<Received> l = received(path);
    if (l.isEmpty()) {
      throw new AssertionError("no request to " + path + " in " + received);
    }
    return l.get(l.size() - 1);
  }

  @Override
  public void close() {
    release.countDown();
    server.stop(0);
    pool.shutdownNow();
  }

  // ---- handling ----

  private void handle(HttpExchange ex) throws IOException {
    byte[] body = ex.getRequestBody().readAllBytes();
    Map<String, String> headers = new TreeMap<>();
    ex.getRequestHeaders().forEach((k, v) -> headers.put(k.toLowerCase(Locale.ROOT), v.isEmpty() ? "" : v.get(0)));
    String path = ex.getRequestURI().getPath();
    received.add(new Received(ex.getRequestMethod(), path, Map.copyOf(headers), body, ex.getRemoteAddress().getPort()));
    synchronized (arrivals) {
      arrivals.notifyAll();
    }
    if (closeConnections) {
      ex.getResponseHeaders().set("Connection", "close");
    }
    switch (ex.getRequestMethod() + " " + path) {
      case "GET /server_info" -> send(ex, serverInfoStatus, "application/json",
          serverInfoStatus == 200 ? serverInfo.toString() : "{\"object\":\"error\",\"message\":\"not ready\"}");
      case "GET /health" -> send(ex, healthStatus, "text/plain", healthStatus == 200 ? "" : "LLM is unavailable.");
      case "POST /kv_cache_events" -> kvCacheEvents(ex);
      case "GET /steady_clock_offset" -> send(ex, 200, "application/json",
          "{\"receive_ts\": " + System.nanoTime() / 1e9 + ", \"transmit_ts\": " + System.nanoTime() / 1e9 + "}");
      case "POST /steady_clock_offset" -> send(ex, 200, "application/json", "");
      case "GET /v1/models" -> send(ex, 200, "application/json",
          "{\"object\": \"list\", \"data\": [{\"id\": \"" + MODEL + "\", \"object\": \"model\", \"owned_by\": \"tensorrt_llm\"}]}");
      case "POST /v1/completions" -> completion(ex, JSON.readTree(body), false);
      case "POST /v1/chat/completions" -> completion(ex, JSON.readTree(body), true);
      default -> send(ex, 404, "application/json", "{\"detail\":\"Not Found\"}");
    }
  }

  private void kvCacheEvents(HttpExchange ex) throws IOException {
    kvPolls.incrementAndGet();
    String raw = kvRawBodies.poll();
    if (raw != null) {
      send(ex, 200, "application/json", raw);
      return;
    }
    StringBuilder sb = new StringBuilder("[");
    for (String e; (e = kvEvents.poll()) != null; ) {
      sb.append(sb.length() > 1 ? "," : "").append(e);
    }
    send(ex, 200, "application/json", sb.append(']').toString());
  }

  private void completion(HttpExchange ex, JsonNode req, boolean chat) throws IOException {
    Behavior b = behaviors.poll();
    if (b == null) {
      b = Behavior.ok();
    }
    boolean stream = req.path("stream").asBoolean(false);
    switch (b.kind()) {
      case STATUS -> {
        send(ex, b.status(), "application/json", b.body());
        return;
      }
      case RAW -> {
        int nul = b.body().indexOf('\u0000');
        send(ex, 200, b.body().substring(0, nul), b.body().substring(nul + 1));
        return;
      }
      case CLOSE_AFTER, STALL_AFTER -> {
        if (b.chunks() == 0 || !stream) {
          breakOff(b);
          return;
        }
      }
      case BULK -> {
        bulk(ex, b);
        return;
      }
      case SSE_FOR_NON_STREAM -> stream = true;
      case JSON_FOR_STREAM -> stream = false;
      default -> { }
    }
    String type = req.path("disaggregated_params").path("request_type").asText("context_and_generation");
    if (type.equals("context_only")) {
      send(ex, 200, "application/json", contextResponse(req, chat).toString());
    } else if (!stream) {
      send(ex, 200, "application/json", generationResponse(req, chat).toString());
    } else {
      stream(ex, req, chat, b);
    }
  }

  /** Ends the exchange without an answer: abort the connection or stall until closed. */
  private void breakOff(Behavior b) {
    if (b.kind() == Behavior.Kind.STALL_AFTER) {
      awaitRelease();
    }
    // an exception from a handler makes the JDK server close the connection without completing the answer
    throw new IllegalStateException("fake trtllm-serve: connection broken off on purpose");
  }

  private void awaitRelease() {
    try {
      release.await(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void stream(HttpExchange ex, JsonNode req, boolean chat, Behavior b) throws IOException {
    ex.getResponseHeaders().set("Content-Type", "text/event-stream; charset=utf-8");
    ex.sendResponseHeaders(200, 0); // chunked
    OutputStream out = ex.getResponseBody();
    int n = streamChunks;
    out.write(": keep-alive comment\n\n".getBytes(StandardCharsets.UTF_8));
    out.flush();
    for (int i = 0; i < n; i++) {
      if ((b.kind() == Behavior.Kind.CLOSE_AFTER || b.kind() == Behavior.Kind.STALL_AFTER) && i == b.chunks()) {
        breakOff(b);
      }
      String event = "data: " + streamChunk(req, chat, i, i == n - 1) + "\n\n";
      byte[] bytes = event.getBytes(StandardCharsets.UTF_8);
      if (i == 0) { // one event split over two writes
        out.write(bytes, 0, bytes.length / 2);
        out.flush();
        out.write(bytes, bytes.length / 2, bytes.length - bytes.length / 2);
      } else if (i == 1) { // CRLF line ends and an ignored field
        out.write(("id: " + i + "\r\n" + event.replace("\n", "\r\n")).getBytes(StandardCharsets.UTF_8));
      } else {
        out.write(bytes);
      }
      out.flush();
    }
    if ((b.kind() == Behavior.Kind.CLOSE_AFTER || b.kind() == Behavior.Kind.STALL_AFTER) && n == b.chunks()) {
      breakOff(b);
    }
    out.write("data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8));
    out.close();
  }

  private void bulk(HttpExchange ex, Behavior b) throws IOException {
    ex.getResponseHeaders().set("Content-Type", "text/event-stream; charset=utf-8");
    ex.sendResponseHeaders(200, 0);
    String pad = "x".repeat(Math.max(0, b.status() - 120));
    try (OutputStream out = ex.getResponseBody()) {
      for (int i = 0; i < b.chunks(); i++) {
        byte[] event = ("data: {\"id\":\"cmpl-bulk\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\""
            + i + pad + "\",\"finish_reason\":null}]}\n\n").getBytes(StandardCharsets.UTF_8);
        out.write(event);
        bulkBytes.addAndGet(event.length);
      }
      out.write("data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8));
    }
  }

  private static void send(HttpExchange ex, int status, String type, String body) throws IOException {
    byte[] bytes = body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8);
    ex.getResponseHeaders().set("Content-Type", type);
    ex.sendResponseHeaders(status, bytes.length == 0 ? -1 : bytes.length);
    try (OutputStream out = ex.getResponseBody()) {
      out.write(bytes);
    }
  }

  // ---- response shapes (openai_protocol.py; context-only answers as openai_disagg_service.py expects) ----

  private ObjectNode usage() {
    ObjectNode u = JSON.createObjectNode().put("prompt_tokens", PROMPT_TOKENS).put("completion_tokens", 1)
        .put("total_tokens", PROMPT_TOKENS + 1);
    u.putObject("prompt_tokens_details").put("cached_tokens", CACHED_TOKENS);
    return u;
  }

  private ObjectNode contextResponse(JsonNode req, boolean chat) {
    ObjectNode r = JSON.createObjectNode();
    int ctxId = ctxIds.incrementAndGet();
    r.put("id", (chat ? "chatcmpl-ctx-" : "cmpl-ctx-") + ctxId)
        .put("object", chat ? "chat.completion" : "text_completion")
        .put("created", 1_700_000_000L)
        .put("model", req.path("model").asText("m"));
    ObjectNode choice = r.putArray("choices").addObject().put("index", 0);
    if (chat) {
      choice.putObject("message").put("role", "assistant").put("content", "");
    } else {
      choice.put("text", "");
    }
    choice.put("finish_reason", "length");
    ObjectNode dp = choice.putObject("disaggregated_params");
    dp.put("request_type", "context_only");
    dp.putArray("first_gen_tokens").add(7);
    dp.put("ctx_request_id", ctxId);
    dp.put("encoded_opaque_state", OPAQUE_STATE);
    dp.set("disagg_request_id", req.path("disaggregated_params").path("disagg_request_id"));
    dp.put("ctx_dp_rank", CTX_DP_RANK);
    r.set("usage", usage());
    if (chat && req.path("disaggregated_params").path("return_prompt_token_ids_b64").asBoolean(false)) {
      r.putNull("prompt_token_ids"); // asked for base64 int32 (upstream's gen_tokids_ctxbytes)
      r.put("prompt_token_ids_b64", PROMPT_IDS_B64);
      return r;
    }
    ArrayNode ids = r.putArray("prompt_token_ids");
    for (int i = 1; i <= PROMPT_TOKENS; i++) {
      ids.add(i);
    }
    r.putNull("prompt_token_ids_b64");
    return r;
  }

  private ObjectNode generationResponse(JsonNode req, boolean chat) {
    ObjectNode r = JSON.createObjectNode();
    r.put("id", chat ? "chatcmpl-gen" : "cmpl-gen").put("object", chat ? "chat.completion" : "text_completion")
        .put("created", 1_700_000_000L).put("model", req.path("model").asText("m"));
    ObjectNode choice = r.putArray("choices").addObject().put("index", 0);
    StringBuilder text = new StringBuilder();
    for (int i = 0; i < streamChunks; i++) {
      text.append("tok-").append(i);
    }
    if (chat) {
      choice.putObject("message").put("role", "assistant").put("content", text.toString());
    } else {
      choice.put("text", text.toString());
    }
    choice.put("finish_reason", "stop");
    r.set("usage", usage());
    return r;
  }

  private ObjectNode streamChunk(JsonNode req, boolean chat, int i, boolean last) {
    ObjectNode r = JSON.createObjectNode();
    r.put("id", chat ? "chatcmpl-gen" : "cmpl-gen")
        .put("object", chat ? "chat.completion.chunk" : "text_completion")
        .put("created", 1_700_000_000L).put("model", req.path("model").asText("m"));
    ObjectNode choice = r.putArray("choices").addObject().put("index", 0);
    if (chat) {
      ObjectNode delta = choice.putObject("delta");
      if (i == 0) {
        delta.put("role", "assistant");
      }
      delta.put("content", "tok-" + i);
    } else {
      choice.put("text", "tok-" + i);
    }
    if (last) {
      choice.put("finish_reason", "stop");
      r.set("usage", usage());
    } else {
      choice.putNull("finish_reason");
    }
    return r;
  }
}
