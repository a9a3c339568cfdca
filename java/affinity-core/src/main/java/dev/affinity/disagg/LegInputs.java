package dev.affinity.disagg;

import dev.affinity.config.SubagentScope;
import dev.affinity.executor.KvRetention;
import dev.affinity.conversation.Resolution;
import dev.affinity.frontend.AdmittedRequest;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ConversationParams;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.TokenIds;
import dev.affinity.routing.ContentKey;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.RoutingRequest;
import dev.affinity.routing.Selection;
import dev.affinity.worker.TraceContext;
import dev.affinity.worker.WorkerRequest;
import java.time.Duration;
import java.util.List;

/**
 * What one request's legs are built from: the request the legs carry (the client's, or after a resume the stream's
 * continuation) and its prompt ids, turned into the routers' {@link RoutingRequest}s and the legs' bodies, with the
 * conversation, affinity id, cache salt, schedule style and leg timeout every leg carries. Used under its flow's lock.
 */
final class LegInputs {
  private final DisaggSettings settings;
  private final AdmittedRequest admitted;
  /** What the legs are built from: the client's request, or after a resume the stream's continuation. */
  private OpenAiRequest request;
  /** The prompt's token ids for routing and the legs (the continuation's after a resume), or null. */
  private int[] promptTokens;
  private Long contentKey;
  private ChatCompletionRequest contentKeyOf;
  /**
   * The ids admission forwards to the legs, or null: one object for every leg of the request, so that a context
   * answer that repeats them is not parsed ({@link dev.affinity.worker.EncodedResponse#read}) and their JSON is written
   * once.
   */
  private TokenIds forwarded;

  LegInputs(DisaggSettings settings, AdmittedRequest admitted) {
    this.settings = settings;
    this.admitted = admitted;
    this.request = admitted.request();
    this.promptTokens = admitted.promptTokens();
    this.forwarded = forwardedIds();
  }

  /** From now on the legs are built from a resumed stream's continuation. */
  void resume(StreamResume.Plan plan) {
    request = plan.body();
    promptTokens = plan.prompt();
    forwarded = forwardedIds();
  }

  /** The request the legs are built from: the client's, or the continuation of a resumed stream. */
  OpenAiRequest request() {
    return request;
  }

  /** The prompt's token ids from admission (a resumed stream's: the continuation's), or null. */
  int[] tokens() {
    return promptTokens;
  }

  RoutingRequest routing(long requestId, Fleet fleet) {
    Resolution r = admitted.resolution();
    RoutingRequest.Builder b = RoutingRequest.builder(requestId, fleet)
        .routingKey(r.routingKey(fleet, settings.scope()))
        .conversationId(r.conversationId())
        .affinityId(r.affinityId())
        .tokens(promptTokens)
        .cacheSalt(cacheSalt())
        .blockChains(admitted.blockChains())
        .maxNewTokens(request.maxOutputTokens().orElse(1));
    if (promptTokens == null) {
      b.text(request.routingText());
    }
    if (request instanceof ChatCompletionRequest chat) {
      b.contentKey(() -> contentKey(chat));  // when a router asks (kv_cache_aware), on this flow's thread
    }
    return b.build();
  }

  /**
   * Upstream's content key of a chat ({@link ContentKey}), computed once per request body; upstream computes it after
   * the write-back, so the ids count when they replace the messages.
   */
  private Long contentKey(ChatCompletionRequest chat) {
    if (contentKeyOf != chat) {
      contentKey = ContentKey.of(chat, chat.promptTokenIds() != null ? chat.promptTokenIds().toArray()
          : admitted.forwardTokens() ? promptTokens : null);
      contentKeyOf = chat;
    }
    return contentKey;
  }

  /** The route of attempt {@code requestId} before any leg: the conversation, the routing keys, the retries so far. */
  RouteInfo firstRoute(long requestId, int retries) {
    Resolution r = admitted.resolution();
    SubagentScope scope = settings.scope();
    return RouteInfo.of(requestId)
        .withConversation(new RouteInfo.Conversation(r.conversationId(), r.affinityId()))
        .withKeys(new RouteInfo.RoutingKeys(r.routingKey(Fleet.CONTEXT, scope), r.routingKey(Fleet.GENERATION, scope)))
        .withRetries(retries);
  }

  /** The request's KV cache salt (admission's: the body's, or under tenant isolation the tenant's). */
  String cacheSalt() {
    return admitted.cacheSalt();
  }

  /** The affinity id goes to the context leg, and to the generation leg only with scope both. */
  String affinityFor(Fleet fleet) {
    return fleet == Fleet.CONTEXT || settings.scope() == SubagentScope.BOTH ? admitted.resolution().affinityId() : null;
  }

  /**
   * Each leg gets an equal share of the request's budget, so that a stalled worker times out while there
   * is still time to retry elsewhere.
   */
  Duration legTimeout() {
    return share(settings.requestTimeout(), settings.maxRetries() + 1L);
  }

  /**
   * {@code total.dividedBy(parts)} (rounded toward zero to the nanosecond) without its {@code BigDecimal} arithmetic
   * (once per leg) while the total fits a {@code long} of nanoseconds.
   */
  static Duration share(Duration total, long parts) {
    long seconds = total.getSeconds();
    return seconds > -(1L << 32) && seconds < 1L << 32 ? Duration.ofNanos(total.toNanos() / parts) : total.dividedBy(parts);
  }

  /**
   * What attempt {@code requestId}'s {@code fleet} leg sends to the worker {@code sel} chose: {@code body}, the leg's
   * affinity id, the rank hint, the leg's timeout, the cache salt, the trace context and the KV retention (null: none).
   */
  WorkerRequest workerRequest(long requestId, Fleet fleet, Selection sel, OpenAiRequest body, TraceContext trace,
      KvRetention retention) {
    return new WorkerRequest(requestId, body, affinityFor(fleet), sel.rank(), legTimeout(), cacheSalt(), trace,
        retention);
  }

  String conversationId() {
    return admitted.resolution().conversationId();
  }

  /**
   * A leg's body: the request with these params, its own conversation id, streaming off when {@code noStreaming}, the
   * leg's agent {@code priority} (null: none), and the prompt ids when known: the ids a context leg saw
   * ({@code promptIds}, or {@code promptIdsB64} as its answer spelled them), else the ids admission forwards. With
   * {@link DisaggSettings#idsAsBase64()} a chat leg carries them as {@code prompt_token_ids_b64} (a context answer's
   * string verbatim); with {@link DisaggSettings#stripGenerationHistory()} a chat {@code generation} leg carrying a
   * context's ids keeps only the last message (TensorRT-LLM's {@code gen_strip_message_history}, tools kept).
   */
  OpenAiRequest legBody(boolean noStreaming, DisaggregatedParams params, TokenIds promptIds, String promptIdsB64,
      boolean generation, Double priority) {
    boolean fromContext = promptIds != null || promptIdsB64 != null;
    TokenIds ids = fromContext ? promptIds : forwarded;
    ConversationParams conversation = conversationId() == null ? null : new ConversationParams(conversationId());
    if (!(request instanceof ChatCompletionRequest chat)) {
      if (ids == null && promptIdsB64 != null) { // a completion's prompt is an array: the context's ids, decoded
        ids = TokenIds.fromBase64(promptIdsB64, "prompt_token_ids_b64");
      }
      return request.forLeg(noStreaming, params, conversation, ids, priority);
    }
    String b64 = promptIdsB64 != null ? promptIdsB64
        : ids != null && settings.idsAsBase64() ? ids.toBase64() : null;
    boolean strip = generation && fromContext && settings.stripGenerationHistory() && chat.messages().size() > 1;
    ChatCompletionRequest body = chat.forLeg(noStreaming, params, conversation, b64 == null ? ids : null, priority);
    if (b64 == null && !strip) {
      return body;
    }
    ChatCompletionRequest.Builder b = body.toBuilder();
    if (b64 != null) {
      b.promptTokenIds(null).promptTokenIdsB64(b64);
    }
    if (strip) {
      b.messages(List.of(chat.messages().get(chat.messages().size() - 1)));
    }
    return b.build();
  }

  /** The ids admission forwards to the legs of {@link #request}, or null (the client's own ids, or text). */
  private TokenIds forwardedIds() {
    if (promptTokens == null || request.hasPromptTokenIds() || !admitted.forwardTokens()) {
      return null;
    }
    // admission's object, whose JSON follows the conversation's last turn's, unless a resume changed the ids
    return admitted.legIds() != null && promptTokens == admitted.promptTokens() ? admitted.legIds()
        : TokenIds.of(promptTokens);
  }
}
