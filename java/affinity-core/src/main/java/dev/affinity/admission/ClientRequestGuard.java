package dev.affinity.admission;

import dev.affinity.protocol.ConversationParams;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.ProtocolException;

/**
 * The public API's rules on what a client may send: internal hand-off state
 * ({@code disaggregated_params}) is refused with 400 unless {@code affinity.allow_client_disaggregated_params}
 * is set (TensorRT-LLM's disaggregated server likewise keeps it internal), a chat request's own
 * {@code chat_template} is refused unless {@code allow_request_chat_template} is set (upstream's
 * {@code trtllm-serve} option of that name), and the conversation id a routing decision may take from the
 * body is {@code conversation_params.conversation_id} only: the sub-agent affinity id never comes from a
 * body (the protocol types drop it when parsing).
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
  }

  /** The body's own conversation id ({@code conversation_params.conversation_id}), or null. */
  public static String bodyConversationId(OpenAiRequest request) {
    ConversationParams p = request.conversationParams();
    return p == null ? null : p.conversationId();
  }
}
