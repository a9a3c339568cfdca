package dev.affinity.admission;

import dev.affinity.config.DisaggConfig;
import dev.affinity.conversation.ConversationResolver;
import dev.affinity.conversation.ConversationSettings;
import dev.affinity.conversation.HeaderSource;
import dev.affinity.conversation.InvalidHeaderException;
import dev.affinity.conversation.Resolution;
import dev.affinity.frontend.AdmittedRequest;
import dev.affinity.frontend.ClientSink;
import dev.affinity.frontend.CompletionHandler;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.protocol.TokenIds;
import java.util.Objects;
import java.util.function.Predicate;

/**
 * The one step between a parsed client request and orchestration, in this order: the public API's rules
 * ({@link ClientRequestGuard}, 400 naming the field), the model ({@code 404} naming {@code model}), the
 * routing headers and the conversation ({@link ConversationResolver}, 400 naming the header), and the
 * prompt's token ids ({@link PromptTokenizer}) within the deployment's {@link PromptLimit} (400 naming the
 * prompt's field; a prompt whose characters alone exceed the limit by the tokenizer's
 * {@link PromptTokenizer#maxCharsPerToken} bound is refused before it is tokenized). The HTTP frontend, the fleet simulator and embedding
 * services call it; orchestration receives its {@link AdmittedRequest} and checks nothing again.
 * Thread-safe when its parts are.
 */
public final class RequestAdmission {
  /** Every model name is accepted. */
  public static final Predicate<String> ANY_MODEL = model -> true;

  private final ClientRequestGuard guard;
  private final Predicate<String> servesModel;
  private final ConversationResolver resolver;
  private final PromptTokenizer tokenizer;
  private final PromptLimit limit;
  private final KeptTurns keptTurns;

  /**
   * @param servesModel whether a request may name a model ({@link #ANY_MODEL} to accept all)
   * @param tokenizer the prompt's token ids for routing and in-process executors ({@link PromptTokenizer#NONE}
   *     when the frontend has no tokenizer for the model)
   */
  public RequestAdmission(ClientRequestGuard guard, Predicate<String> servesModel, ConversationResolver resolver,
      PromptTokenizer tokenizer) {
    this(guard, servesModel, resolver, tokenizer, PromptLimit.NONE);
  }

  /**
   * @param limit the longest prompt accepted; checked when its token ids are known (tokenized here, or
   *     sent as ids), before any routing
   */
  public RequestAdmission(ClientRequestGuard guard, Predicate<String> servesModel, ConversationResolver resolver,
      PromptTokenizer tokenizer, PromptLimit limit) {
    this(guard, servesModel, resolver, tokenizer, limit, KeptTurns.none(resolver.settings()));
  }

  /**
   * @param keptTurns each conversation's last turn ({@link KeptTurns}): the legs' ids follow its ids' JSON
   */
  public RequestAdmission(ClientRequestGuard guard, Predicate<String> servesModel, ConversationResolver resolver,
      PromptTokenizer tokenizer, PromptLimit limit, KeptTurns keptTurns) {
    this.keptTurns = Objects.requireNonNull(keptTurns, "keptTurns");
    this.guard = Objects.requireNonNull(guard, "guard");
    this.servesModel = Objects.requireNonNull(servesModel, "servesModel");
    this.resolver = Objects.requireNonNull(resolver, "resolver");
    this.tokenizer = Objects.requireNonNull(tokenizer, "tokenizer");
    this.limit = Objects.requireNonNull(limit, "limit");
  }

  /**
   * The admission a disaggregated configuration asks for: its client rules
   * ({@code affinity.allow_client_disaggregated_params}, {@code allow_request_chat_template}) and its
   * session and sub-agent headers.
   */
  public static RequestAdmission of(DisaggConfig config, Predicate<String> servesModel, PromptTokenizer tokenizer) {
    return new RequestAdmission(
        new ClientRequestGuard(config.affinity().allowClientDisaggregatedParams(), config.allowRequestChatTemplate()),
        servesModel, new ConversationResolver(ConversationSettings.from(config)), tokenizer);
  }

  /** Whether admitting {@code request} tokenizes a long prompt ({@link PromptTokenizer#isLong}): admit it off the loop. */
  public boolean tokenizesLong(OpenAiRequest request) {
    return tokenizer.isLong(request);
  }

  public KeptTurns keptTurns() {
    return keptTurns;
  }

  public ConversationResolver resolver() {
    return resolver;
  }

  /**
   * Admits a request or says why not.
   *
   * @throws RequestRejectedException with the 4xx status and the error body naming the field or header
   */
  public AdmittedRequest admit(OpenAiRequest request, HeaderSource headers) {
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(headers, "headers");
    try {
      guard.check(request);
      if (!servesModel.test(request.model())) {
        throw new RequestRejectedException(404,
            ErrorResponse.of(404, "The model `" + request.model() + "` does not exist.", "model"));
      }
      Resolution resolution = resolver.resolve(ClientRequestGuard.bodyConversationId(request), headers);
      limit.checkSize(request, tokenizer);
      int[] tokens = tokenizer.tokenize(request, resolution);
      limit.check(request, tokens);
      boolean forward = tokens != null && tokenizer.forwardsIds(request);
      TokenIds legIds = forward && !request.hasPromptTokenIds() ? keptTurns.legIds(headers, tokens) : null;
      dev.affinity.kv.BlockChains chains = tokens == null ? null : keptTurns.blockChains(headers);
      if (resolution.tenant() == null) {
        return new AdmittedRequest(request, headers, resolution, tokens, request.cacheSalt(), forward, legIds, chains);
      }
      // Tenant isolation: the tenant salts the KV cache (its own salt, if any, after it). A chat body
      // carries the salt to every worker; other requests' salt reaches the routers and in-process executors.
      String salt = resolution.tenant() + (request.cacheSalt() == null ? "" : "/" + request.cacheSalt());
      OpenAiRequest salted = request instanceof ChatCompletionRequest chat ? chat.toBuilder().cacheSalt(salt).build() : request;
      return new AdmittedRequest(salted, headers, resolution, tokens, salt, forward, legIds, chains);
    } catch (ProtocolException e) {
      throw new RequestRejectedException(e);
    } catch (InvalidHeaderException e) {
      throw new RequestRejectedException(400, ErrorResponse.of(400, e.getMessage(), e.header()));
    }
  }

  /**
   * Admits a request and hands it to {@code handler}; a rejection is answered on the sink instead
   * ({@link ClientSink#fail} with its status and body). What an embedding service or the fleet simulator
   * calls per request.
   */
  public void admitAndHandle(OpenAiRequest request, HeaderSource headers, CompletionHandler handler, ClientSink sink) {
    AdmittedRequest admitted;
    try {
      admitted = admit(request, headers);
    } catch (RequestRejectedException e) {
      sink.fail(e.status(), e.error(), RouteInfo.of(0));
      return;
    }
    handler.handle(admitted, sink);
  }
}
