package dev.affinity.server.workermode;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.frontend.CompletionHandler;
import dev.affinity.executor.KvEvent;
import dev.affinity.kv.TrtllmKvEventCodec;
import dev.affinity.nativebridge.worker.NativeWorker;
import dev.affinity.server.http.ExtraEndpoint;
import dev.affinity.server.http.FrontendBackend;
import dev.affinity.server.worker.LegAuth;
import dev.affinity.server.worker.WorkerExtensions;
import dev.affinity.worker.WorkerInfo;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What the HTTP server of a worker process serves: the completion endpoints through
 * {@link WorkerHandler}, {@code /health} from the executor's state, and a trtllm-serve worker's control
 * endpoints, {@code GET /server_info} and {@code POST /kv_cache_events}; with a key, Affinity's leg
 * signature guards the completions and {@code /kv_cache_events} ({@link #authenticate}).
 */
final class WorkerBackend implements FrontendBackend {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(WorkerBackend.class);
  /** The most events one {@code /kv_cache_events} answer carries; the rest wait for the next poll. */
  static final int MAX_EVENTS_PER_POLL = 65_536;
  private static final int DRAIN_BATCH = 4_096;

  /** The header upstream's frontend flags msgpack bodies with ({@code TRTLLM_SERVE_ENABLE_MSGSPEC=1}). */
  static final String MSGPACK_HEADER = "x-trtllm-msgpack";
  private static final com.fasterxml.jackson.databind.ObjectMapper MSGPACK =
      new com.fasterxml.jackson.databind.ObjectMapper(new org.msgpack.jackson.dataformat.MessagePackFactory());
  private static final com.fasterxml.jackson.databind.ObjectMapper JSON = new com.fasterxml.jackson.databind.ObjectMapper();

  private final NativeWorker worker;
  private final WorkerSettings settings;
  private final WorkerHandler handler;
  private final String version;
  /** Leaving: its key is deleted; new requests get 503 while those in flight finish. */
  private volatile boolean draining;
  /** The steady-clock offset a frontend set (seconds), as upstream's worker keeps it for its perf metrics. */
  private volatile double frontendClockOffset;

  /** With a key: checks {@link LegAuth#HEADER} on completions and {@code /kv_cache_events}; null without one. */
  private final LegAuth.Verifier legAuth;
  private final java.util.concurrent.atomic.AtomicBoolean warnedRefused = new java.util.concurrent.atomic.AtomicBoolean();

  /** With a key: checks the signature of {@code /release_context} (audience {@value ContextReleaser#AUDIENCE}). */
  private final LegAuth.Verifier releaseAuth;
  /** Publishes this worker's KV events to NATS ({@code --nats}), or null: frontends drain {@code /kv_cache_events}. */
  private volatile dev.affinity.server.shared.WorkerKvPublisher kvPublisher;

  /** Releases taken (a context pulled by a generation worker in another process). */
  private final java.util.concurrent.atomic.AtomicLong released = new java.util.concurrent.atomic.AtomicLong();

  WorkerBackend(NativeWorker worker, WorkerSettings settings, WorkerHandler handler, String version,
      LegAuth.Verifier legAuth, LegAuth.Verifier releaseAuth) {
    this.releaseAuth = releaseAuth;
    this.worker = worker;
    this.settings = settings;
    this.handler = handler;
    this.version = version;
    this.legAuth = legAuth;
  }

  /**
   * With a key, the completion endpoints and {@code /kv_cache_events} (which returns other requests' token
   * ids) need a valid, fresh {@link LegAuth#HEADER}, checked here on the raw request before the body is
   * decoded, parsed or validated and before the model and readiness checks; other routes are open, as on a
   * trtllm-serve worker. The first refusal is a warning, later ones debug lines.
   */
  @Override
  public String authenticate(String method, String path, dev.affinity.conversation.HeaderSource headers, byte[] body) {
    LegAuth.Verifier verifier = path.equals(ContextReleaser.PATH) ? releaseAuth : GUARDED.contains(path) ? legAuth : null;
    if (verifier == null) {
      return null;
    }
    String refusal = verifier.refusal(method, path, headers, body);
    if (refusal != null) {
      if (warnedRefused.compareAndSet(false, true)) {
        LOG.warn("worker {}: refused {} {} (401): {}; do the frontends use this worker's key? (logged once)",
            worker.id(), method, path, refusal);
      } else {
        LOG.debug("worker {}: refused {} {} (401): {}", worker.id(), method, path, refusal);
      }
    }
    return refusal;
  }

  /** The routes a key guards. */
  static final java.util.Set<String> GUARDED = java.util.Set.of("/v1/completions", "/v1/chat/completions",
      "/kv_cache_events");

  @Override
  public CompletionHandler handler() {
    return handler;
  }

  /** {@code POST /v1/messages/count_tokens}: the converted prompt counted with this worker's tokenizer. */
  @Override
  public java.util.concurrent.CompletionStage<Integer> countTokens(dev.affinity.protocol.ChatCompletionRequest request,
      byte[] anthropicBody) {
    return java.util.concurrent.CompletableFuture.completedFuture(worker.promptTokens(request).length);
  }

  @Override
  public List<String> models() {
    return settings.model() == null ? List.of() : List.of(settings.model());
  }

  @Override
  public boolean ready() {
    return worker.isAlive() && !draining;
  }

  /** Stops taking requests (503) while the ones in flight finish. */
  void drain() {
    draining = true;
  }

  double frontendClockOffset() {
    return frontendClockOffset;
  }

  /**
   * A body upstream's frontend sent as msgpack ({@code X-TRTLLM-Msgpack: 1}, Content-Type still JSON), decoded
   * to JSON as upstream's worker decodes it; any other body as it came.
   */
  @Override
  public byte[] requestBody(byte[] body, dev.affinity.conversation.HeaderSource headers) {
    if (!"1".equals(headers.first(MSGPACK_HEADER)) || body.length == 0) {
      return body;
    }
    try {
      com.fasterxml.jackson.databind.JsonNode tree = MSGPACK.readTree(body);
      return JSON.writeValueAsBytes(tree);
    } catch (java.io.IOException | org.msgpack.core.MessagePackException e) {
      // msgpack-core reports some malformed input (a reserved byte such as 0xc1) unchecked
      throw dev.affinity.protocol.ProtocolException.of(400, "the body is flagged " + MSGPACK_HEADER
          + ": 1 but is not valid msgpack: " + e.getMessage(), null);
    }
  }

  @Override
  public JsonNode clusterInfo() {
    ObjectNode root = JsonNodeFactory.instance.objectNode();
    root.put("is_ready", ready());
    root.set("worker", serverInfo());
    return root;
  }

  @Override
  public Map<String, ExtraEndpoint> extraEndpoints() {
    return Map.of(
        "/server_info", ExtraEndpoint.get(body -> serverInfo()),
        "/kv_cache_events", ExtraEndpoint.post(body -> drainKvEvents()),
        "/_internal/tokenize", ExtraEndpoint.post(this::tokenize),
        "/steady_clock_offset", new ExtraEndpoint("GET, POST", false, this::steadyClockOffset),
        ContextReleaser.PATH, ExtraEndpoint.post(this::releaseContext));
  }

  /**
   * {@code POST /release_context {"ctx_request_ids": [n, ...]}} (or one {@code "ctx_request_id": n}): a generation
   * worker in another process has pulled these contexts of this worker (or no longer needs them), so their held KV
   * is freed now rather than on the hold timeout. Idempotent: a context already pulled, released or expired is a
   * no-op. With a key, signed ({@link ContextReleaser}).
   */
  Object releaseContext(byte[] body) {
    JsonNode request = json(body);
    List<Long> ids = new ArrayList<>();
    JsonNode one = request == null ? null : request.get("ctx_request_id");
    JsonNode many = request == null ? null : request.get("ctx_request_ids");
    if (one != null) {
      ids.add(releaseId(one, "ctx_request_id"));
    }
    if (many != null) {
      if (!many.isArray()) {
        throw dev.affinity.protocol.ProtocolException.invalidField("ctx_request_ids", "must be an array of integers");
      }
      many.forEach(n -> ids.add(releaseId(n, "ctx_request_ids")));
    }
    if (one == null && many == null) {
      throw dev.affinity.protocol.ProtocolException.invalidField("ctx_request_ids", "required: the contexts to release");
    }
    for (long id : ids) {
      worker.releaseContext(dev.affinity.protocol.DisaggregatedParams.builder(
          dev.affinity.protocol.DisaggRequestType.CONTEXT_ONLY).ctxRequestId(id).build());
    }
    released.addAndGet(ids.size());
    return JsonNodeFactory.instance.objectNode();
  }

  private static long releaseId(JsonNode n, String field) {
    if (!n.isIntegralNumber() || !n.canConvertToLong()) {
      throw dev.affinity.protocol.ProtocolException.invalidField(field, "must be an integer, got " + n);
    }
    return n.asLong();
  }

  /** A control endpoint's JSON body (null for an empty one); 400 when it is not JSON. */
  private static JsonNode json(byte[] body) {
    try {
      return JSON.readTree(body);
    } catch (java.io.IOException e) {
      throw dev.affinity.protocol.ProtocolException.of(400, "malformed JSON: " + e.getMessage(), null);
    }
  }

  /** Releases taken so far. */
  long released() {
    return released.get();
  }

  /**
   * {@code POST /_internal/tokenize} as upstream's worker serves it (TensorRT-LLM
   * {@code tensorrt_llm/serve/openai_protocol.py}, {@code TokenizeRequest} / {@code TokenizeResponse}): the text of
   * {@code prompt} encoded with this worker's tokenizer, no special tokens; {@code model} is accepted and ignored.
   * A frontend asks it for the ids of a stream's text when it continues that stream on another worker.
   */
  Object tokenize(byte[] body) {
    JsonNode request = json(body);
    JsonNode prompt = request == null ? null : request.get("prompt");
    if (prompt == null || !prompt.isTextual()) {
      throw dev.affinity.protocol.ProtocolException.invalidField("prompt", "must be a string");
    }
    int[] ids = worker.encodeText(prompt.asText());
    ObjectNode answer = JsonNodeFactory.instance.objectNode().put("count", ids.length);
    ArrayNode tokens = answer.putArray("tokens");
    for (int id : ids) {
      tokens.add(id);
    }
    return answer;
  }

  /**
   * Upstream's clock exchange: {@code GET} answers when the request arrived and when the answer left, on this
   * process's steady clock (seconds); {@code POST {"offset": s}} keeps the offset a frontend measured.
   */
  Object steadyClockOffset(ExtraEndpoint.Request request) {
    if (request.method().equals("GET")) {
      double receive = System.nanoTime() / 1e9;
      return JsonNodeFactory.instance.objectNode().put("receive_ts", receive).put("transmit_ts", System.nanoTime() / 1e9);
    }
    JsonNode body = json(request.body());
    if (body == null || !body.path("offset").isNumber()) {
      throw dev.affinity.protocol.ProtocolException.invalidField("offset", "expected a number of seconds");
    }
    frontendClockOffset = body.get("offset").asDouble();
    LOG.info("worker {}: steady clock offset to the frontend {} s", worker.id(), frontendClockOffset);
    return JsonNodeFactory.instance.objectNode();
  }

  /**
   * trtllm-serve's {@code /server_info} fields a router reads, plus Affinity's extension: the ranks are
   * visible, so an Affinity frontend routes to (worker, rank) and sends its rank hint; a completion's cache salt is
   * taken ({@value WorkerExtensions#CACHE_SALT_HEADER}) and held contexts are released on
   * {@value WorkerExtensions#RELEASE_CONTEXT_PATH}.
   */
  ObjectNode serverInfo() {
    WorkerInfo info = worker.info();
    ObjectNode root = JsonNodeFactory.instance.objectNode();
    root.put("kv_cache_hash_algo", info.hashAlgorithm().wireName());
    root.put("tokens_per_block", info.tokensPerBlock());
    root.put("max_batch_size", info.maxBatchSize());
    root.put("max_num_tokens", info.maxNumTokens());
    String fingerprint = worker.codec().renderFingerprint();
    if (fingerprint != null) {  // a model tokenizer: a frontend with the same may send chats as ids
      root.putObject("render_fingerprint").put("digest", fingerprint);
    }
    ObjectNode ext = root.putObject(WorkerExtensions.SERVER_INFO_KEY);
    ext.put(WorkerExtensions.NUM_RANKS, info.numRanks());
    ext.put(WorkerExtensions.RANKS_VISIBLE, true);
    ext.put(WorkerExtensions.COMPLETION_CACHE_SALT, true);
    ext.put(WorkerExtensions.RELEASE_CONTEXT, true);
    dev.affinity.server.shared.WorkerKvPublisher publisher = kvPublisher;
    if (publisher != null) {
      ext.putObject(WorkerExtensions.KV_EVENTS_NATS).put(WorkerExtensions.KV_EVENTS_SUBJECT, publisher.subject())
          .put(WorkerExtensions.KV_EVENTS_PUBLISHER, publisher.publisherKey());
    }
    ext.put("name", worker.id());
    ext.put("backend", worker.executor().backend());
    ext.put("model", settings.model());
    ext.put("tokenizer", settings.tokenizer());
    ext.put("version", version);
    return root;
  }

  /** From now on the events go to NATS through {@code publisher}, and {@code /server_info} says so. */
  void publishKvEvents(dev.affinity.server.shared.WorkerKvPublisher publisher) {
    this.kvPublisher = publisher;
  }

  /**
   * {@code POST /kv_cache_events}: the buffered events, oldest first, in TensorRT-LLM's shape; drains them. Empty while
   * the worker publishes them to NATS itself: a drain would take them from the stream every frontend reads.
   */
  ArrayNode drainKvEvents() {
    List<KvEvent> events = new ArrayList<>();
    if (kvPublisher != null) {
      return TrtllmKvEventCodec.toJson(events, worker.info().tokensPerBlock());
    }
    while (events.size() < MAX_EVENTS_PER_POLL) {
      List<KvEvent> batch = worker.executor().drainKvEvents(Math.min(DRAIN_BATCH, MAX_EVENTS_PER_POLL - events.size()));
      if (batch.isEmpty()) {
        break;
      }
      events.addAll(batch);
    }
    return TrtllmKvEventCodec.toJson(events, worker.info().tokensPerBlock());
  }
}
