package dev.affinity.protocol;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The mutable builder of a {@link ChatCompletionRequest} ({@link ChatCompletionRequest#builder},
 * {@link ChatCompletionRequest#toBuilder}); {@link #build()} validates and freezes.
 */
public final class ChatCompletionRequestBuilder {
  private String model;
  private List<ChatMessage> messages;
  private TokenIds promptTokenIds;
  private String promptTokenIdsB64;
  private Integer maxTokens;
  private Integer maxCompletionTokens;
  private SamplingParams sampling = SamplingParams.NONE;
  private Boolean stream;
  private StreamOptions streamOptions;
  private Boolean logprobs;
  private Integer topLogprobs;
  private Boolean echo;
  private JsonNode tools;
  private JsonNode toolChoice;
  private JsonNode responseFormat;
  private String user;
  private Double priority;
  private String chatTemplate;
  private JsonNode chatTemplateKwargs;
  private Boolean addGenerationPrompt;
  private Boolean addSpecialTokens;
  private String cacheSalt;
  private DisaggregatedParams disaggregatedParams;
  private ConversationParams conversationParams;
  private final Map<String, JsonNode> extra = new LinkedHashMap<>();

  ChatCompletionRequestBuilder() {}


  public ChatCompletionRequestBuilder model(String v) {
    model = v;
    return this;
  }

  public ChatCompletionRequestBuilder messages(List<ChatMessage> v) {
    messages = v;
    return this;
  }

  public ChatCompletionRequestBuilder promptTokenIds(TokenIds v) {
    promptTokenIds = v;
    return this;
  }

  public ChatCompletionRequestBuilder promptTokenIdsB64(String v) {
    promptTokenIdsB64 = v;
    return this;
  }

  public ChatCompletionRequestBuilder maxTokens(Integer v) {
    maxTokens = v;
    return this;
  }

  public ChatCompletionRequestBuilder maxCompletionTokens(Integer v) {
    maxCompletionTokens = v;
    return this;
  }

  /** The sampling knobs ({@code temperature}, {@code top_p}, ..., {@code ignore_eos}). */
  public ChatCompletionRequestBuilder sampling(SamplingParams v) {
    sampling = Objects.requireNonNull(v, "sampling");
    return this;
  }

  public ChatCompletionRequestBuilder stream(Boolean v) {
    stream = v;
    return this;
  }

  public ChatCompletionRequestBuilder streamOptions(StreamOptions v) {
    streamOptions = v;
    return this;
  }

  public ChatCompletionRequestBuilder logprobs(Boolean v) {
    logprobs = v;
    return this;
  }

  public ChatCompletionRequestBuilder topLogprobs(Integer v) {
    topLogprobs = v;
    return this;
  }

  public ChatCompletionRequestBuilder echo(Boolean v) {
    echo = v;
    return this;
  }

  public ChatCompletionRequestBuilder tools(JsonNode v) {
    tools = v;
    return this;
  }

  public ChatCompletionRequestBuilder toolChoice(JsonNode v) {
    toolChoice = v;
    return this;
  }

  public ChatCompletionRequestBuilder responseFormat(JsonNode v) {
    responseFormat = v;
    return this;
  }

  public ChatCompletionRequestBuilder user(String v) {
    user = v;
    return this;
  }

  public ChatCompletionRequestBuilder priority(Double v) {
    priority = v;
    return this;
  }

  public ChatCompletionRequestBuilder chatTemplate(String v) {
    chatTemplate = v;
    return this;
  }

  public ChatCompletionRequestBuilder chatTemplateKwargs(JsonNode v) {
    chatTemplateKwargs = v;
    return this;
  }

  public ChatCompletionRequestBuilder addGenerationPrompt(Boolean v) {
    addGenerationPrompt = v;
    return this;
  }

  public ChatCompletionRequestBuilder addSpecialTokens(Boolean v) {
    addSpecialTokens = v;
    return this;
  }

  public ChatCompletionRequestBuilder cacheSalt(String v) {
    cacheSalt = v;
    return this;
  }

  public ChatCompletionRequestBuilder disaggregatedParams(DisaggregatedParams v) {
    disaggregatedParams = v;
    return this;
  }

  public ChatCompletionRequestBuilder conversationParams(ConversationParams v) {
    conversationParams = v;
    return this;
  }

  /** Sets an unmodelled field; a modelled name is rejected at {@link #build()}. */
  public ChatCompletionRequestBuilder putExtra(String name, JsonNode value) {
    extra.put(Objects.requireNonNull(name, "name"), value);
    return this;
  }

  /** Every unmodelled field of {@code fields}, in their order (a request's own, already checked). */
  ChatCompletionRequestBuilder extraFrom(Map<String, JsonNode> fields) {
    extra.putAll(fields);
    return this;
  }

  public ChatCompletionRequestBuilder removeExtra(String name) {
    extra.remove(name);
    return this;
  }

  public ChatCompletionRequest build() {
    SamplingParams s = sampling;
    return new ChatCompletionRequest(model, messages, promptTokenIds, promptTokenIdsB64, maxTokens,
        maxCompletionTokens, s.temperature(), s.topP(), s.topK(), s.n(), s.seed(), s.stop(), stream, streamOptions,
        logprobs, topLogprobs, echo, tools, toolChoice, responseFormat, user, priority, s.ignoreEos(), chatTemplate,
        chatTemplateKwargs, addGenerationPrompt, addSpecialTokens, cacheSalt, disaggregatedParams,
        conversationParams, extra);
  }
}
