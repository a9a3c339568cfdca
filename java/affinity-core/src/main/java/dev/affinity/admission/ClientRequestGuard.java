package dev.affinity.admission;

import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.CompletionRequest;
import dev.affinity.protocol.ConversationParams;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.ProtocolException;

/**
 * The public API's rules on what a client may send (reference trtllm-disagg.md §3.3): internal
 * handoff state ({@code disaggregated_params}) is refused with 400 unless
 * {@code affinity.allow_client_disaggregated_params} is set, and the conversation id a routing
 * decision may take from the body is {@code conversation_params.conversation_id} only — the
 * sub-agent affinity id never comes from a body (the protocol types drop it when parsing).
 */
public final class ClientRequestGuard {
  private final boolean allowClientDisaggregatedParams;

  public ClientRequestGuard(boolean allowClientDisaggregatedParams) {
    this.allowClientDisaggregatedParams = allowClientDisaggregatedParams;
  }

  /** Throws a 400 {@link ProtocolException} naming the field when the request carries internal state. */
  public void check(CompletionRequest request) {
    checkParams(request.disaggregatedParams());
  }

  public void check(ChatCompletionRequest request) {
    checkParams(request.disaggregatedParams());
  }

  private void checkParams(DisaggregatedParams params) {
    if (params != null && !allowClientDisaggregatedParams) {
      throw ProtocolException.invalidField("disaggregated_params",
          "carries internal context/generation handoff state and is not accepted from clients "
              + "(set affinity.allow_client_disaggregated_params: true to accept it)");
    }
  }

  /** The body's own conversation id ({@code conversation_params.conversation_id}), or null. */
  public static String bodyConversationId(CompletionRequest request) {
    return idOf(request.conversationParams());
  }

  public static String bodyConversationId(ChatCompletionRequest request) {
    return idOf(request.conversationParams());
  }

  private static String idOf(ConversationParams p) {
    return p == null ? null : p.conversationId();
  }
}
