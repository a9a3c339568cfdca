package dev.affinity.admission;

import dev.affinity.conversation.ConversationResolver;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.CompletionRequest;
import dev.affinity.protocol.ConversationParams;
import dev.affinity.protocol.SamplingParams;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.ProtocolException;

/**
 * The public API's rules on what a client may send: internal hand-off state
 * ({@code disaggregated_params}) is refused with 400 unless {@code affinity.allow_client_disaggregated_params}
 * is set (TensorRT-LLM's disaggregated server likewise keeps it internal), a chat request's own
 * {@code chat_template} is refused unless {@code allow_request_chat_template} is set (upstream's
 * {@code trtllm-serve} option of that name), and the conversation id a routing decision may take from the
 * body is {@code conversation_params.conversation_id} only: the sub-agent affinity id never comes from a
 * body (the protocol types drop it when parsing); that id obeys the rules of the header form (length,
 * no control characters). Sampling values outside the ranges the OpenAI API accepts are refused, each
 * naming its field.
 */
public final class ClientRequestGuard {
  private final boolean allowClientDisaggregatedParams;
  private final boolean allowRequestChatTemplate;

  public ClientRequestGuard(boolean allowClientDisaggregatedParams, boolean allowRequestChatTemplate) {
    this.allowClientDisaggregatedParams = allowClientDisaggregatedParams;
    this.allowRequestChatTemplate = allowRequestChatTemplate;
  }

  /** Neither internal state nor a request chat template accepted. */
  public static ClientRequestGuard strict() {
    return new ClientRequestGuard(false, false);
  }

  /** Throws a 400 {@link ProtocolException} naming the field when the request breaks a rule. */
  public void check(OpenAiRequest request) {
    if (request.disaggregatedParams() != null && !allowClientDisaggregatedParams) {
      throw ProtocolException.invalidField("disaggregated_params",
          "carries internal context/generation handoff state and is not accepted from clients "
              + "(set affinity.allow_client_disaggregated_params: true to accept it)");
    }
    if (request.chatTemplate() != null && !allowRequestChatTemplate) {
      throw ProtocolException.invalidField("chat_template",
          "a chat template in the request is not accepted (set allow_request_chat_template: true to accept it)");
    }
    checkRanges(request);
    FieldRules.check(request);
    String own = bodyConversationId(request);
    if (own != null) {
      String problem = ConversationResolver.problemWith(own);
      if (problem != null) {
        throw ProtocolException.invalidField("conversation_params.conversation_id", "conversation_id " + problem);
      }
    }
  }

  /**
   * The ranges the OpenAI API enforces (its API reference for completions and chat completions), with
   * TensorRT-LLM's {@code top_k} convention ({@code tensorrt_llm/serve/openai_protocol.py}: -1 and 0 mean
   * off).
   */
  private static void checkRanges(OpenAiRequest request) {
    SamplingParams s = request.sampling();
    if (s.temperature() != null && (s.temperature() < 0 || s.temperature() > 2)) {
      throw ProtocolException.invalidField("temperature", "temperature must be in [0, 2], got " + s.temperature());
    }
    if (s.topP() != null && (s.topP() <= 0 || s.topP() > 1)) {
      throw ProtocolException.invalidField("top_p", "top_p must be in (0, 1], got " + s.topP());
    }
    if (s.topK() != null && s.topK() < -1) {
      throw ProtocolException.invalidField("top_k", "top_k must be -1 or 0 (off) or a positive number of tokens, got "
          + s.topK());
    }
    if (s.n() != null && s.n() < 1) {
      throw ProtocolException.invalidField("n", "n must be at least 1, got " + s.n());
    }
    request.maxOutputTokens().ifPresent(max -> {
      if (max < 1) {
        String field = request instanceof ChatCompletionRequest c && c.maxTokens() == null ? "max_completion_tokens"
            : "max_tokens";
        throw ProtocolException.invalidField(field, field + " must be at least 1, got " + max);
      }
    });
    // both are checked: max_tokens wins when both are sent, but an invalid max_completion_tokens is still invalid
    if (request instanceof ChatCompletionRequest c && c.maxCompletionTokens() != null && c.maxCompletionTokens() < 1) {
      throw ProtocolException.invalidField("max_completion_tokens", "max_completion_tokens must be at least 1, got "
          + c.maxCompletionTokens());
    }
    if (request instanceof CompletionRequest c && c.logprobs() != null && (c.logprobs() < 0 || c.logprobs() > 5)) {
      throw ProtocolException.invalidField("logprobs", "logprobs must be in [0, 5], got " + c.logprobs());
    }
    if (request instanceof ChatCompletionRequest c && c.topLogprobs() != null) {
      if (c.topLogprobs() < 0 || c.topLogprobs() > 20) {
        throw ProtocolException.invalidField("top_logprobs", "top_logprobs must be in [0, 20], got " + c.topLogprobs());
      }
      if (!Boolean.TRUE.equals(c.logprobs())) {
        throw ProtocolException.invalidField("top_logprobs", "top_logprobs needs logprobs: true");
      }
    }
  }

  /** The body's own conversation id ({@code conversation_params.conversation_id}), or null. */
  public static String bodyConversationId(OpenAiRequest request) {
    ConversationParams p = request.conversationParams();
    return p == null ? null : p.conversationId();
  }
}
