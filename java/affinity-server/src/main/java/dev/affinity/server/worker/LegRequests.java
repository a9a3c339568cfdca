package dev.affinity.server.worker;

import com.fasterxml.jackson.databind.JsonNode;
import dev.affinity.executor.KvRetentionJson;
import dev.affinity.protocol.InternalAuth;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.worker.TraceContext;
import dev.affinity.worker.WorkerInfo;
import dev.affinity.worker.WorkerRequest;
import io.netty.handler.codec.http.HttpMethod;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP requests one worker is sent, as {@link RequestTemplate}s: a leg's {@code POST} with its JSON body and
 * headers (internal auth as in docs/workers.md, the rank hint, KV retention and a completion's cache salt to an
 * Affinity worker process, the
 * W3C trace context, the leg signature), and the control requests (signed when they are POSTs). What the worker
 * reported in {@code /server_info} (its ranks, its name) is read at each request through the suppliers.
 */
final class LegRequests {
  private static final Logger LOG = LoggerFactory.getLogger(LegRequests.class);
  static final String JSON = "application/json";

  private final String id;
  private final String basePath;
  private final String host;
  private final ProtocolCodec codec;
  private final RequestSigner signer;
  /** Signs every POST with {@link LegAuth#HEADER}; null without a key. */
  private final LegAuth.Signer legSigner;
  private final Supplier<WorkerInfo> info;
  private final Supplier<JsonNode> serverInfo;
  private final Supplier<WorkerFeatures> features;

  LegRequests(HttpWorkerSettings settings, String host, ProtocolCodec codec, Supplier<WorkerInfo> info,
      Supplier<JsonNode> serverInfo, Supplier<WorkerFeatures> features) {
    this.id = settings.workerId();
    this.basePath = settings.basePath();
    this.host = host;
    this.codec = codec;
    InternalAuth auth = InternalAuth.ofNullable(settings.authKey()).orElse(null);
    this.signer = new RequestSigner(id, auth);
    this.legSigner = auth == null ? null : new LegAuth.Signer(auth, java.time.Clock.systemUTC());
    this.info = info;
    this.serverInfo = serverInfo;
    this.features = features;
  }

  /**
   * The leg's {@code POST}.
   *
   * @throws RuntimeException when the body cannot be written
   */
  RequestTemplate leg(WorkerRequest request) {
    OpenAiRequest body = request.body();
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
    String salt = cacheSaltHeader(request);
    if (salt != null) {
      headers.add(new RequestTemplate.Header(WorkerExtensions.CACHE_SALT_HEADER, salt));
    }
    TraceContext trace = request.trace();
    if (trace != null) { // W3C trace context: the worker's spans join the request's trace (docs/tracing.md)
      headers.add(new RequestTemplate.Header(TraceContext.TRACEPARENT, trace.traceparent()));
      if (trace.tracestate() != null) {
        headers.add(new RequestTemplate.Header(TraceContext.TRACESTATE, trace.tracestate()));
      }
    }
    if (legSigner == null) {  // written at each write, straight into its buffer
      int size = sizeHint(body);
      return new RequestTemplate(HttpMethod.POST, basePath + body.path(), host, headers,
          new RequestTemplate.BodyWriter() {
            @Override
            public void writeTo(java.io.OutputStream out) throws java.io.IOException {
              codec.writeJson(body, out);
            }

            @Override
            public int sizeHint() {
              return size;
            }
          });
    }
    byte[] json = codec.toJsonBytes(body);
    return new RequestTemplate(HttpMethod.POST, basePath + body.path(), host, headers, json,
        legSignature(body.path(), json, hint, affinityId, retention, salt));
  }

  /**
   * About the bytes of a leg's JSON: its messages' text and its ids (eight bytes each: a vocabulary's ids have up to
   * six digits, and a comma), with room for the rest; a body longer than this grows its buffer once or twice.
   */
  static int sizeHint(OpenAiRequest body) {
    long size = 2048;
    if (body instanceof dev.affinity.protocol.ChatCompletionRequest chat) {
      size += chat.contentChars() + 96L * chat.messages().size();
    }
    dev.affinity.protocol.TokenIds ids = body.tokenPrompt();
    if (ids != null) {
      size += 8L * ids.size();
    }
    return (int) Math.min(size, 64 << 20);
  }

  /**
   * Whether the leg has a KV cache salt that does not reach the worker's cache: a completion (upstream models
   * {@code cache_salt} on chats only, and a chat's body carries it) to a worker that does not take
   * {@value WorkerExtensions#CACHE_SALT_HEADER} (a stock trtllm-serve worker).
   */
  boolean saltMissed(WorkerRequest request) {
    return request.cacheSalt() != null && !request.body().isChat() && cacheSaltHeader(request) == null;
  }

  /**
   * The {@value WorkerExtensions#CACHE_SALT_HEADER} value: a completion's salt, to a worker that takes it; null for a
   * chat (its body carries {@code cache_salt}), without a salt, or for a salt that is not a printable ASCII header
   * value (admission's tenant salts always are).
   */
  private String cacheSaltHeader(WorkerRequest request) {
    String salt = request.cacheSalt();
    if (salt == null || request.body().isChat() || !features.get().completionCacheSalt()) {
      return null;
    }
    for (int i = 0; i < salt.length(); i++) {
      char c = salt.charAt(i);
      if (c < 0x21 || c > 0x7e) {
        return null;
      }
    }
    return salt;
  }

  /** A control request without a body; a POST is signed. */
  RequestTemplate control(HttpMethod method, String path) {
    return method.equals(HttpMethod.POST)
        ? new RequestTemplate(method, basePath + path, host, List.of(), null,
            legSignature(path, null, null, null, null, null))
        : RequestTemplate.of(method, basePath + path, host);
  }

  /**
   * {@code POST /release_context {"ctx_request_ids": [id]}}, signed as a generation worker signs its release ({@link
   * LegAuth}, the worker field {@value WorkerExtensions#RELEASE_AUDIENCE}) when there is a key.
   */
  RequestTemplate releaseContext(long ctxRequestId) {
    byte[] body = ("{\"ctx_request_ids\": [" + ctxRequestId + "]}").getBytes(java.nio.charset.StandardCharsets.UTF_8);
    String path = WorkerExtensions.RELEASE_CONTEXT_PATH;
    LegAuth.Signer s = legSigner;
    return new RequestTemplate(HttpMethod.POST, basePath + path, host,
        List.of(new RequestTemplate.Header("content-type", JSON)), body, s == null ? null
            : () -> new RequestTemplate.Header(LegAuth.HEADER,
                s.sign("POST", path, body, null, null, WorkerExtensions.RELEASE_AUDIENCE)));
  }

  /** A control {@code POST} of a JSON body that is not signed (it carries nothing of a leg). */
  RequestTemplate unsignedJson(String path, byte[] body) {
    return new RequestTemplate(HttpMethod.POST, basePath + path, host,
        List.of(new RequestTemplate.Header("content-type", JSON)), body);
  }

  /**
   * The {@value WorkerExtensions#RANK_HINT_HEADER} value: the router's rank, sent only to a worker whose
   * ranks are visible (an Affinity worker process; a trtllm-serve worker picks its rank itself).
   */
  private String rankHint(WorkerRequest request) {
    WorkerInfo current = info.get();
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
    return request.retention() == null || !info.get().ranksVisible() ? null
        : KvRetentionJson.toJson(request.retention());
  }

  /**
   * The {@link LegAuth#HEADER} of a POST, computed at each write (null without a key): the path without the
   * base path, the exact body bytes, the rank hint and affinity id as sent, and the worker's name from its
   * {@code /server_info}. Sent to every worker; a trtllm-serve worker ignores it.
   */
  private Supplier<RequestTemplate.Header> legSignature(String path, byte[] body, String rankHint, String affinityId,
      String retention, String cacheSalt) {
    LegAuth.Signer s = legSigner;
    if (s == null) {
      return null;
    }
    return () -> new RequestTemplate.Header(LegAuth.HEADER,
        s.sign("POST", path, body, rankHint, affinityId, retention, cacheSalt, workerName()));
  }

  /** The worker's name as its {@code /server_info} reports it ({@code affinity.name}), or null. */
  private String workerName() {
    JsonNode s = serverInfo.get();
    JsonNode name = s == null ? null : s.path(WorkerExtensions.SERVER_INFO_KEY).get("name");
    return name != null && name.isTextual() ? name.asText() : null;
  }
}
