package dev.affinity.protocol;

import com.fasterxml.jackson.annotation.JsonAnyGetter;
import com.fasterxml.jackson.annotation.JsonAnySetter;
import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A {@code POST /v1/completions} body. Models what the frontend reads or rewrites; every other field a
 * client sent (sampling knobs such as {@code frequency_penalty}, {@code min_tokens}, {@code lora_request},
 * future fields) is kept in {@link #extra()} and forwarded unchanged. Immutable; derive the forwarded
 * copies with the {@code with...} methods or {@link #toBuilder()}.
 *
 * <p>{@code model} and {@code prompt} are required. {@code priority} must lie in [0, 1]. An explicit JSON
 * null on a modelled scalar field is read as "absent" (upstream treats both as unset) and is not
 * written back; nulls in unmodelled fields and in opaque values are kept.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record CompletionRequest(
    @JsonProperty("model") String model,
    @JsonProperty("prompt") Prompt prompt,
    @JsonProperty("max_tokens") Integer maxTokens,
    @JsonProperty("temperature") Double temperature,
    @JsonProperty("top_p") Double topP,
    @JsonProperty("top_k") Integer topK,
    @JsonProperty("n") Integer n,
    @JsonProperty("seed") Long seed,
    @JsonProperty("stop") StringOrList stop,
    @JsonProperty("stream") Boolean stream,
    @JsonProperty("stream_options") StreamOptions streamOptions,
    @JsonProperty("logprobs") Integer logprobs,
    @JsonProperty("echo") Boolean echo,
    @JsonProperty("response_format") JsonNode responseFormat,
    @JsonProperty("user") String user,
    @JsonProperty("priority") Double priority,
    @JsonProperty("ignore_eos") Boolean ignoreEos,
    @JsonProperty("add_special_tokens") Boolean addSpecialTokens,
    @JsonProperty("disaggregated_params") DisaggregatedParams disaggregatedParams,
    @JsonProperty("conversation_params") ConversationParams conversationParams,
    @JsonAnySetter @JsonAnyGetter Map<String, JsonNode> extra) implements OpenAiRequest {

  static final Set<String> FIELDS = Set.of(
      "model", "prompt", "max_tokens", "temperature", "top_p", "top_k", "n", "seed", "stop", "stream",
      "stream_options", "logprobs", "echo", "response_format", "user", "priority", "ignore_eos",
      "add_special_tokens", "disaggregated_params", "conversation_params");

  /**
   * @throws ProtocolException naming the field when a required field is missing or a value is invalid
   */
  public CompletionRequest {
    Json.required(model, "model");
    Json.required(prompt, "prompt");
    new SamplingParams(temperature, topP, topK, n, seed, stop, ignoreEos);  // validates the knobs
    RequestFields.PRIORITY.check(priority);
    responseFormat = RequestFields.RESPONSE_FORMAT.opaque(responseFormat);
    extra = Json.freezeExtra(extra, FIELDS, Json.SUBAGENT_AFFINITY_ID);
  }

  public static Builder builder(String model, Prompt prompt) {
    return new Builder().model(model).prompt(prompt);
  }

  /** A builder holding this request's fields (a copy is derived from it). */
  public Builder toBuilder() {
    return new Builder().model(model).prompt(prompt).maxTokens(maxTokens).sampling(sampling()).stream(stream)
        .streamOptions(streamOptions).logprobs(logprobs).echo(echo).responseFormat(responseFormat).user(user)
        .priority(priority).addSpecialTokens(addSpecialTokens).disaggregatedParams(disaggregatedParams)
        .conversationParams(conversationParams).extraFrom(extra);
  }

  /** Whether the client asked for a streamed (SSE) answer. */
  @JsonIgnore
  public boolean isStreaming() {
    return Boolean.TRUE.equals(stream);
  }

  /** The prompt text, when the prompt is a string. */
  public Optional<String> promptText() {
    return prompt instanceof Prompt.Text t ? Optional.of(t.text()) : Optional.empty();
  }

  /** The prompt token ids, when the prompt is pre-tokenized. */
  public Optional<TokenIds> promptTokenIds() {
    return prompt instanceof Prompt.Tokens t ? Optional.of(t.ids()) : Optional.empty();
  }

  @Override
  public TokenIds tokenPrompt() {
    return prompt instanceof Prompt.Tokens t ? t.ids() : null;
  }

  @Override
  public boolean hasPromptTokenIds() {
    return prompt instanceof Prompt.Tokens;
  }

  @Override
  public String routingText() {
    return promptText().orElse("");
  }

  /** The sampling knobs, as one record ({@link SamplingParams#NONE} when the client set none). */
  @Override
  public SamplingParams sampling() {
    return new SamplingParams(temperature, topP, topK, n, seed, stop, ignoreEos);
  }

  @Override
  public CompletionRequest forLeg(boolean noStreaming, DisaggregatedParams params, ConversationParams conversation,
      TokenIds ids, Double newPriority) {
    return toBuilder().leg(noStreaming, params, conversation, ids, newPriority).build();
  }

  /** The copy for a non-streaming leg: {@code stream=false}, no {@code stream_options}. */
  public CompletionRequest withoutStreaming() {
    return toBuilder().noStreaming().build();
  }

  public CompletionRequest withStream(Boolean newStream, StreamOptions newStreamOptions) {
    return toBuilder().stream(newStream).streamOptions(newStreamOptions).build();
  }

  /** A copy with these params (null removes them). */
  public CompletionRequest withDisaggregatedParams(DisaggregatedParams params) {
    return toBuilder().disaggregatedParams(params).build();
  }

  /** A copy with these params (null removes them). */
  public CompletionRequest withConversationParams(ConversationParams params) {
    return toBuilder().conversationParams(params).build();
  }

  /** A copy whose prompt is {@code ids} (the generation leg gets the context leg's prompt token ids). */
  public CompletionRequest withPromptTokenIds(TokenIds ids) {
    return toBuilder().prompt(Prompt.tokens(ids)).build();
  }

  @Override
  public CompletionRequest continuation(TokenIds ids, Integer maxOutputTokens) {
    Builder b = toBuilder().prompt(Prompt.tokens(ids));
    return (maxOutputTokens == null ? b : b.maxTokens(maxOutputTokens)).build();
  }

  public CompletionRequest withMaxTokens(Integer newMaxTokens) {
    return toBuilder().maxTokens(newMaxTokens).build();
  }

  @Override
  public JsonNode responseFormat() {
    return Json.copy(responseFormat);
  }


  /** The mutable builder of a {@link CompletionRequest}; {@link #build()} validates and freezes. */
  public static final class Builder extends OpenAiRequestBuilder<CompletionRequest, Builder> {
    private Prompt prompt;
    private Integer logprobs;

    private Builder() {}

    @Override
    Builder promptIds(TokenIds ids) {
      return prompt(Prompt.tokens(ids));
    }

    public Builder prompt(Prompt v) {
      prompt = v;
      return this;
    }

    public Builder logprobs(Integer v) {
      logprobs = v;
      return this;
    }

    @Override
    public CompletionRequest build() {
      SamplingParams s = sampling;
      return new CompletionRequest(model, prompt, maxTokens, s.temperature(), s.topP(), s.topK(), s.n(), s.seed(),
          s.stop(), stream, streamOptions, logprobs, echo, responseFormat, user, priority, s.ignoreEos(),
          addSpecialTokens, disaggregatedParams, conversationParams, extra());
    }
  }
}
