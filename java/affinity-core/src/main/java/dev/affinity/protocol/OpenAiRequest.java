package dev.affinity.protocol;

import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import java.util.Optional;

/** A completion or chat-completion request: what orchestration and workers handle alike. */
public sealed interface OpenAiRequest permits CompletionRequest, ChatCompletionRequest {
  String model();

  /** The sampling knobs ({@link SamplingParams#NONE} when the client set none). */
  SamplingParams sampling();

  /** The client's {@code seed}, or null. */
  default Long seed() {
    return sampling().seed();
  }

  StreamOptions streamOptions();

  boolean isStreaming();

  DisaggregatedParams disaggregatedParams();

  ConversationParams conversationParams();

  /** The fields the client sent that the record does not model, forwarded as sent (frozen: reads are deep copies). */
  Map<String, JsonNode> extra();

  /** The conversation id of {@code conversation_params}, else the legacy {@code disaggregated_params} mirror. */
  default Optional<String> conversationId() {
    ConversationParams c = conversationParams();
    if (c != null) {
      return Optional.of(c.conversationId());
    }
    DisaggregatedParams d = disaggregatedParams();
    return d == null ? Optional.empty() : Optional.ofNullable(d.conversationId());
  }

  OpenAiRequest withoutStreaming();

  OpenAiRequest withDisaggregatedParams(DisaggregatedParams params);

  OpenAiRequest withConversationParams(ConversationParams params);

  /** Completions: replaces the prompt; chat: sets {@code prompt_token_ids}. */
  OpenAiRequest withPromptTokenIds(TokenIds ids);

  /**
   * A leg's body in one copy: {@link #withoutStreaming()} when {@code noStreaming}, these disaggregated and
   * conversation params (null removes them), and {@link #withPromptTokenIds} when {@code ids} is not null. Equal
   * to those calls one after the other, which each copy and check the whole request.
   */
  default OpenAiRequest forLeg(boolean noStreaming, DisaggregatedParams params, ConversationParams conversation,
      TokenIds ids) {
    return forLeg(noStreaming, params, conversation, ids, null);
  }

  /**
   * {@link #forLeg(boolean, DisaggregatedParams, ConversationParams, TokenIds)} with TensorRT-LLM's request
   * {@code priority} set to {@code priority} (null: the body's own).
   */
  OpenAiRequest forLeg(boolean noStreaming, DisaggregatedParams params, ConversationParams conversation, TokenIds ids,
      Double priority);

  /** TensorRT-LLM's request {@code priority} in [0, 1], or null when the request sets none. */
  Double priority();

  /**
   * The request that continues a cut stream: the prompt replaced by {@code ids} (the original prompt's ids and the
   * tokens already streamed), the output limit, when the client set one, lowered to {@code maxOutputTokens}.
   */
  OpenAiRequest continuation(TokenIds ids, Integer maxOutputTokens);

  /** A chat request's own {@code chat_template}; null for completions, which have none. */
  default String chatTemplate() {
    return null;
  }

  /**
   * A chat request's {@code cache_salt} (its KV cache is partitioned by it: TensorRT-LLM's
   * {@code tensorrt_llm/serve/openai_protocol.py} models it on chat requests only); null for completions.
   */
  default String cacheSalt() {
    return null;
  }

  /** The prompt as token ids (a completion's token prompt, a chat's {@code prompt_token_ids}), or null. */
  TokenIds tokenPrompt();

  /**
   * Whether the client sent the prompt as token ids (a completion's token prompt, a chat's {@code prompt_token_ids} or
   * {@code prompt_token_ids_b64}).
   */
  boolean hasPromptTokenIds();

  /**
   * The prompt as text for routers that work without token ids: a completion's text prompt (empty for a
   * token prompt), a chat's messages as {@code role:content} lines.
   */
  String routingText();

  /** The endpoint path the request goes to. */
  default String path() {
    return this instanceof ChatCompletionRequest ? "/v1/chat/completions" : "/v1/completions";
  }

  /** Not a wire field: Jackson would otherwise write it as {@code "chat"} (trtllm-serve forbids unknown fields). */
  @JsonIgnore
  default boolean isChat() {
    return this instanceof ChatCompletionRequest;
  }

  /** The requested output limit ({@code max_tokens}, for chat also {@code max_completion_tokens}). */
  default Optional<Integer> maxOutputTokens() {
    if (this instanceof ChatCompletionRequest c) {
      return c.effectiveMaxTokens();
    }
    return Optional.ofNullable(((CompletionRequest) this).maxTokens());
  }
}
