package dev.affinity.protocol;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Objects;

/**
 * What the chat and completion builders share ({@link ChatCompletionRequest.Builder},
 * {@link CompletionRequest.Builder}): the fields both requests carry, their unmodelled fields, and the one derivation
 * of a leg's body from the client's request ({@link OpenAiRequest#forLeg}). Each subclass adds its own fields, says
 * how a leg's prompt token ids are carried, and builds its record; {@code build()} validates and freezes.
 *
 * @param <R> the request built
 * @param <B> the builder itself, for chained calls
 */
public abstract sealed class OpenAiRequestBuilder<R extends OpenAiRequest, B extends OpenAiRequestBuilder<R, B>>
    extends ExtraFieldsBuilder<B> permits ChatCompletionRequest.Builder, CompletionRequest.Builder {
  String model;
  Integer maxTokens;
  SamplingParams sampling = SamplingParams.NONE;
  Boolean stream;
  StreamOptions streamOptions;
  Boolean echo;
  JsonNode responseFormat;
  String user;
  Double priority;
  Boolean addSpecialTokens;
  DisaggregatedParams disaggregatedParams;
  ConversationParams conversationParams;

  OpenAiRequestBuilder() {}

  /** Validates and freezes. */
  public abstract R build();

  /** Sets the prompt a leg carries as token ids: a completion's prompt, a chat's {@code prompt_token_ids}. */
  abstract B promptIds(TokenIds ids);

  /** The body of a leg ({@link OpenAiRequest#forLeg}): the changes a leg makes to the client's request. */
  final B leg(boolean noStreaming, DisaggregatedParams params, ConversationParams conversation, TokenIds ids,
      Double newPriority) {
    disaggregatedParams(params).conversationParams(conversation);
    if (newPriority != null) {
      priority(newPriority);
    }
    if (noStreaming) {
      noStreaming();
    }
    return ids == null ? self() : promptIds(ids);
  }

  /** {@code stream=false} and no {@code stream_options}: a leg the frontend reads whole. */
  final B noStreaming() {
    return stream(false).streamOptions(null);
  }

  public B model(String v) {
    model = v;
    return self();
  }

  public B maxTokens(Integer v) {
    maxTokens = v;
    return self();
  }

  /** The sampling knobs ({@code temperature}, {@code top_p}, ..., {@code ignore_eos}). */
  public B sampling(SamplingParams v) {
    sampling = Objects.requireNonNull(v, "sampling");
    return self();
  }

  public B stream(Boolean v) {
    stream = v;
    return self();
  }

  public B streamOptions(StreamOptions v) {
    streamOptions = v;
    return self();
  }

  public B echo(Boolean v) {
    echo = v;
    return self();
  }

  public B responseFormat(JsonNode v) {
    responseFormat = v;
    return self();
  }

  public B user(String v) {
    user = v;
    return self();
  }

  public B priority(Double v) {
    priority = v;
    return self();
  }

  public B addSpecialTokens(Boolean v) {
    addSpecialTokens = v;
    return self();
  }

  public B disaggregatedParams(DisaggregatedParams v) {
    disaggregatedParams = v;
    return self();
  }

  public B conversationParams(ConversationParams v) {
    conversationParams = v;
    return self();
  }
}
