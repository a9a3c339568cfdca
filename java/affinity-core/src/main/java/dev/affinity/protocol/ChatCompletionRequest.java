package dev.affinity.protocol;

import com.fasterxml.jackson.annotation.JsonAnyGetter;
import com.fasterxml.jackson.annotation.JsonAnySetter;
import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.annotation.JsonSerialize;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A {@code POST /v1/chat/completions} body. Models what the frontend reads or rewrites; every other
 * field a client sent ({@code documents}, {@code reasoning_effort}, {@code thinking},
 * {@code frequency_penalty}, future fields) is kept in {@link #extra()} and forwarded unchanged.
 * Immutable; derive the forwarded copies with the {@code with...} methods or {@link #toBuilder()}.
 *
 * <p>{@code model} and a non-empty {@code messages} are required; each message needs a {@code role}.
 * {@code priority} must lie in [0, 1]. {@code tools}, {@code tool_choice}, {@code response_format} and
 * {@code chat_template_kwargs} are opaque JSON (shape-checked, returned as deep copies; an explicit null
 * is kept). {@code max_tokens} and {@code max_completion_tokens} are kept as sent; see
 * {@link #effectiveMaxTokens()}. An explicit JSON null on a modelled scalar field is read as "absent".
 *
 * <p>It mirrors upstream's chat request ({@code ChatCompletionRequest} in TensorRT-LLM's
 * {@code tensorrt_llm/serve/openai_protocol.py}): thirty wire fields; the sampling knobs are shared with completions
 * ({@link SamplingParams}).
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ChatCompletionRequest(
    @JsonProperty("model") String model,
    @JsonProperty("messages") @JsonSerialize(using = Messages.Serializer.class) List<ChatMessage> messages,
    @JsonProperty("prompt_token_ids") TokenIds promptTokenIds,
    @JsonProperty("prompt_token_ids_b64") @JsonSerialize(using = TokenIds.Base64Serializer.class)
    String promptTokenIdsB64,
    @JsonProperty("max_tokens") Integer maxTokens,
    @JsonProperty("max_completion_tokens") Integer maxCompletionTokens,
    @JsonProperty("temperature") Double temperature,
    @JsonProperty("top_p") Double topP,
    @JsonProperty("top_k") Integer topK,
    @JsonProperty("n") Integer n,
    @JsonProperty("seed") Long seed,
    @JsonProperty("stop") StringOrList stop,
    @JsonProperty("stream") Boolean stream,
    @JsonProperty("stream_options") StreamOptions streamOptions,
    @JsonProperty("logprobs") Boolean logprobs,
    @JsonProperty("top_logprobs") Integer topLogprobs,
    @JsonProperty("echo") Boolean echo,
    @JsonProperty("tools") JsonNode tools,
    @JsonProperty("tool_choice") JsonNode toolChoice,
    @JsonProperty("response_format") JsonNode responseFormat,
    @JsonProperty("user") String user,
    @JsonProperty("priority") Double priority,
    @JsonProperty("ignore_eos") Boolean ignoreEos,
    @JsonProperty("chat_template") String chatTemplate,
    @JsonProperty("chat_template_kwargs") JsonNode chatTemplateKwargs,
    @JsonProperty("add_generation_prompt") Boolean addGenerationPrompt,
    @JsonProperty("add_special_tokens") Boolean addSpecialTokens,
    @JsonProperty("cache_salt") String cacheSalt,
    @JsonProperty("disaggregated_params") DisaggregatedParams disaggregatedParams,
    @JsonProperty("conversation_params") ConversationParams conversationParams,
    @JsonAnySetter @JsonAnyGetter Map<String, JsonNode> extra) implements OpenAiRequest {

  static final Set<String> FIELDS = Set.of(
      "model", "messages", "prompt_token_ids", "prompt_token_ids_b64", "max_tokens", "max_completion_tokens",
      "temperature", "top_p", "top_k", "n", "seed", "stop", "stream", "stream_options", "logprobs",
      "top_logprobs", "echo", "tools", "tool_choice", "response_format", "user", "priority", "ignore_eos",
      "chat_template", "chat_template_kwargs", "add_generation_prompt", "add_special_tokens", "cache_salt",
      "disaggregated_params", "conversation_params");

  /**
   * @throws ProtocolException naming the field when a required field is missing or a value is invalid
   */
  public ChatCompletionRequest {
    Json.required(model, "model");
    Json.required(messages, "messages");
    messages = Messages.of(messages, "messages");
    if (messages.isEmpty()) {
      throw ProtocolException.invalidField("messages", "must contain at least one message");
    }
    new SamplingParams(temperature, topP, topK, n, seed, stop, ignoreEos);  // validates the knobs
    RequestFields.PRIORITY.check(priority);
    tools = RequestFields.TOOLS.opaque(tools);
    toolChoice = RequestFields.TOOL_CHOICE.opaque(toolChoice);
    responseFormat = RequestFields.RESPONSE_FORMAT.opaque(responseFormat);
    chatTemplateKwargs = RequestFields.CHAT_TEMPLATE_KWARGS.opaque(chatTemplateKwargs);
    extra = Json.freezeExtra(extra, FIELDS, Json.SUBAGENT_AFFINITY_ID);
  }

  public static Builder builder(String model, List<ChatMessage> messages) {
    return new Builder().model(model).messages(messages);
  }

  /** A builder holding this request's fields (a copy is derived from it). */
  public Builder toBuilder() {
    return new Builder().model(model).messages(messages).promptTokenIds(promptTokenIds)
        .promptTokenIdsB64(promptTokenIdsB64).maxTokens(maxTokens).maxCompletionTokens(maxCompletionTokens)
        .sampling(sampling()).stream(stream).streamOptions(streamOptions).logprobs(logprobs)
        .topLogprobs(topLogprobs).echo(echo).tools(tools).toolChoice(toolChoice).responseFormat(responseFormat)
        .user(user).priority(priority).chatTemplate(chatTemplate).chatTemplateKwargs(chatTemplateKwargs)
        .addGenerationPrompt(addGenerationPrompt).addSpecialTokens(addSpecialTokens).cacheSalt(cacheSalt)
        .disaggregatedParams(disaggregatedParams).conversationParams(conversationParams).extraFrom(extra);
  }

  /** Whether the client asked for a streamed (SSE) answer. */
  @JsonIgnore
  public boolean isStreaming() {
    return Boolean.TRUE.equals(stream);
  }

  /**
   * The generation budget the worker will apply: {@code max_tokens} when sent (upstream reads it as the
   * validation alias of {@code max_completion_tokens}, and the alias wins), else
   * {@code max_completion_tokens}.
   */
  public Optional<Integer> effectiveMaxTokens() {
    return Optional.ofNullable(maxTokens != null ? maxTokens : maxCompletionTokens);
  }

  /** The text of each message's content ({@link ChatMessage#contentText()}), in order. */
  public List<String> messageTexts() {
    return messages.stream().map(ChatMessage::contentText).toList();
  }

  @Override
  public TokenIds tokenPrompt() {
    return promptTokenIds;
  }

  @Override
  public boolean hasPromptTokenIds() {
    return promptTokenIds != null || promptTokenIdsB64 != null;
  }

  @Override
  public String routingText() {
    StringBuilder sb = new StringBuilder();
    messages.forEach(m -> sb.append(m.role()).append(':').append(m.contentText()).append('\n'));
    return sb.toString();
  }

  /** The sampling knobs, as one record ({@link SamplingParams#NONE} when the client set none). */
  @Override
  public SamplingParams sampling() {
    return new SamplingParams(temperature, topP, topK, n, seed, stop, ignoreEos);
  }

  @Override
  public ChatCompletionRequest forLeg(boolean noStreaming, DisaggregatedParams params, ConversationParams conversation,
      TokenIds ids, Double newPriority) {
    return toBuilder().leg(noStreaming, params, conversation, ids, newPriority).build();
  }

  /** The copy for a non-streaming leg: {@code stream=false}, no {@code stream_options}. */
  public ChatCompletionRequest withoutStreaming() {
    return toBuilder().noStreaming().build();
  }

  public ChatCompletionRequest withStream(Boolean newStream, StreamOptions newStreamOptions) {
    return toBuilder().stream(newStream).streamOptions(newStreamOptions).build();
  }

  /** A copy with these params (null removes them). */
  public ChatCompletionRequest withDisaggregatedParams(DisaggregatedParams params) {
    return toBuilder().disaggregatedParams(params).build();
  }

  /** A copy with these params (null removes them). */
  public ChatCompletionRequest withConversationParams(ConversationParams params) {
    return toBuilder().conversationParams(params).build();
  }

  /** A copy carrying the context leg's prompt token ids (messages are kept). */
  public ChatCompletionRequest withPromptTokenIds(TokenIds ids) {
    return toBuilder().promptTokenIds(ids).build();
  }

  /** The rendered prompt as {@code ids} (no base64 form); the limit replaces whichever of the two the client sent. */
  @Override
  public ChatCompletionRequest continuation(TokenIds ids, Integer maxOutputTokens) {
    Builder b = toBuilder().promptTokenIds(ids).promptTokenIdsB64(null);
    if (maxOutputTokens != null) {
      b = maxTokens != null || maxCompletionTokens == null ? b.maxTokens(maxOutputTokens)
          : b.maxCompletionTokens(maxOutputTokens);
    }
    return b.build();
  }

  /** A copy carrying the context leg's base64 int32 prompt ids, relayed verbatim. */
  public ChatCompletionRequest withPromptTokenIdsB64(String b64) {
    return toBuilder().promptTokenIdsB64(b64).build();
  }

  /**
   * The characters of every message's text content ({@link ChatMessage#contentText}), summed; a conversation's next
   * turn counts only the messages it does not share with the last ({@link #withMessagesFollowing}).
   */
  public long contentChars() {
    return ((Messages) messages).textChars();
  }

  /**
   * A copy with {@code newMessages}, the next turn of a conversation whose last request's messages were
   * {@code previous}: their JSON, once written, copies {@code previous}'s for the leading messages that are the same
   * objects (kept turns, {@code dev.affinity.admission.KeptTurns}).
   */
  public ChatCompletionRequest withMessagesFollowing(List<ChatMessage> previous, List<ChatMessage> newMessages) {
    return toBuilder().messages(Messages.following(previous, newMessages, "messages")).build();
  }

  /** A copy with other messages (e.g. only the last one, for {@code gen_strip_message_history}). */
  public ChatCompletionRequest withMessages(List<ChatMessage> newMessages) {
    return toBuilder().messages(newMessages).build();
  }

  @Override
  public JsonNode tools() {
    return Json.copy(tools);
  }

  @Override
  public JsonNode toolChoice() {
    return Json.copy(toolChoice);
  }

  @Override
  public JsonNode responseFormat() {
    return Json.copy(responseFormat);
  }

  @Override
  public JsonNode chatTemplateKwargs() {
    return Json.copy(chatTemplateKwargs);
  }

  /** The mutable builder of a {@link ChatCompletionRequest}; {@link #build()} validates and freezes. */
  public static final class Builder extends OpenAiRequestBuilder<ChatCompletionRequest, Builder> {
    private List<ChatMessage> messages;
    private TokenIds promptTokenIds;
    private String promptTokenIdsB64;
    private Integer maxCompletionTokens;
    private Boolean logprobs;
    private Integer topLogprobs;
    private JsonNode tools;
    private JsonNode toolChoice;
    private String chatTemplate;
    private JsonNode chatTemplateKwargs;
    private Boolean addGenerationPrompt;
    private String cacheSalt;

    private Builder() {}

    @Override
    Builder promptIds(TokenIds ids) {
      return promptTokenIds(ids);
    }

    public Builder messages(List<ChatMessage> v) {
      messages = v;
      return this;
    }

    public Builder promptTokenIds(TokenIds v) {
      promptTokenIds = v;
      return this;
    }

    public Builder promptTokenIdsB64(String v) {
      promptTokenIdsB64 = v;
      return this;
    }

    public Builder maxCompletionTokens(Integer v) {
      maxCompletionTokens = v;
      return this;
    }

    public Builder logprobs(Boolean v) {
      logprobs = v;
      return this;
    }

    public Builder topLogprobs(Integer v) {
      topLogprobs = v;
      return this;
    }

    public Builder tools(JsonNode v) {
      tools = v;
      return this;
    }

    public Builder toolChoice(JsonNode v) {
      toolChoice = v;
      return this;
    }

    public Builder chatTemplate(String v) {
      chatTemplate = v;
      return this;
    }

    public Builder chatTemplateKwargs(JsonNode v) {
      chatTemplateKwargs = v;
      return this;
    }

    public Builder addGenerationPrompt(Boolean v) {
      addGenerationPrompt = v;
      return this;
    }

    public Builder cacheSalt(String v) {
      cacheSalt = v;
      return this;
    }

    @Override
    public ChatCompletionRequest build() {
      SamplingParams s = sampling;
      return new ChatCompletionRequest(model, messages, promptTokenIds, promptTokenIdsB64, maxTokens,
          maxCompletionTokens, s.temperature(), s.topP(), s.topK(), s.n(), s.seed(), s.stop(), stream, streamOptions,
          logprobs, topLogprobs, echo, tools, toolChoice, responseFormat, user, priority, s.ignoreEos(), chatTemplate,
          chatTemplateKwargs, addGenerationPrompt, addSpecialTokens, cacheSalt, disaggregatedParams,
          conversationParams, extra());
    }
  }
}
