package dev.affinity.nativebridge.worker;

import dev.affinity.executor.ContextPhaseParams;
import dev.affinity.executor.ExecutorResponse;
import dev.affinity.protocol.ChatChoice;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ChatCompletionResponse;
import dev.affinity.protocol.ChatCompletionStreamResponse;
import dev.affinity.protocol.ChatDelta;
import dev.affinity.protocol.ChatMessage;
import dev.affinity.protocol.ChatStreamChoice;
import dev.affinity.protocol.CompletionChoice;
import dev.affinity.protocol.CompletionResponse;
import dev.affinity.protocol.CompletionStreamResponse;
import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.OpaqueState;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.protocol.TokenIds;
import dev.affinity.protocol.UsageInfo;
import dev.affinity.worker.IncrementalDecoder;
import dev.affinity.worker.TokenCodec;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * One call's executor responses as OpenAI objects: streamed chunks (text decoded incrementally, the
 * role on the first, usage on the last when asked for), or the whole response with the context
 * phase params of a context-only leg as {@code disaggregated_params}. Used on one thread at a time
 * (the worker's response delivery).
 */
final class OpenAiTranslator {
  private final long requestId;
  private final OpenAiRequest body;
  private final TokenCodec codec;
  private final IncrementalDecoder decoder;
  private final List<Integer> output = new ArrayList<>();
  private boolean firstChunk = true;
  private ExecutorResponse last;

  /** Where this worker takes the news that a context's KV was pulled ({@code ctx_info_endpoint}), or null. */
  private final String contextEndpoint;

  OpenAiTranslator(long requestId, OpenAiRequest body, TokenCodec codec, String contextEndpoint) {
    this.contextEndpoint = contextEndpoint;
    this.requestId = requestId;
    this.body = body;
    this.codec = codec;
    this.decoder = new IncrementalDecoder(codec);
  }

  /** Takes a response's new tokens into the output; call before {@link #chunk} / {@link #whole}. */
  void accept(ExecutorResponse r) {
    for (int t : r.tokens()) {
      output.add(t);
    }
    last = r;
  }

  /** Whether a chunk has been streamed (a failure now comes after the first byte). */
  boolean streamStarted() {
    return !firstChunk;
  }

  /** The chunk of a streamed response's new tokens (with its finish reason on the final one). */
  OpenAiStreamChunk chunk(ExecutorResponse r) {
    String finish = r.isFinal() ? finishReason(r) : null;
    String text = decoder.next(r.tokens(), r.isFinal());
    boolean includeUsage = r.isFinal() && body.streamOptions() != null
        && Boolean.TRUE.equals(body.streamOptions().includeUsage());
    UsageInfo usage = includeUsage ? usage(last) : null;
    long created = System.currentTimeMillis() / 1000;
    OpenAiStreamChunk chunk;
    if (body instanceof ChatCompletionRequest chat) {
      ChatDelta delta = new ChatDelta(firstChunk ? "assistant" : null, text, null, null, null, Map.of());
      chunk = new ChatCompletionStreamResponse("chatcmpl-" + requestId, "chat.completion.chunk", created, chat.model(),
          List.of(new ChatStreamChoice(0, delta, null, finish, null, Map.of())), usage, Map.of());
    } else {
      chunk = new CompletionStreamResponse("cmpl-" + requestId, "text_completion", created, body.model(),
          List.of(new CompletionChoice(0, text, null, null, finish, null, null, Map.of())), usage, Map.of());
    }
    firstChunk = false;
    return chunk;
  }

  /** The context phase params of a context-only leg's final response, as the wire carries them. */
  DisaggregatedParams contextParams(ContextPhaseParams cp) {
    DisaggregatedParams in = body.disaggregatedParams();
    return DisaggregatedParams.builder(DisaggRequestType.CONTEXT_ONLY)
        .firstGenTokens(TokenIds.of(cp.firstGenTokens()))
        .ctxRequestId(cp.ctxRequestId())
        .opaqueState(OpaqueState.ofBytes(cp.opaqueState()))  // bytes: base64 only if it goes over HTTP
        .disaggRequestId(requestId)
        .ctxDpRank(cp.ctxDpRank())
        .scheduleStyle(in == null ? null : in.scheduleStyle())
        .conversationId(in == null ? null : in.conversationId())
        .ctxInfoEndpoint(contextEndpoint == null ? null : dev.affinity.protocol.StringOrList.of(contextEndpoint))
        .build();
  }

  /** The whole (non-streamed) response of the final response r; {@code prompt} goes with context params. */
  OpenAiResponse whole(ExecutorResponse r, int[] prompt) {
    int[] tokens = output.stream().mapToInt(Integer::intValue).toArray();
    String text = codec.decode(tokens);
    DisaggregatedParams ctxParams = r.contextPhase() == null ? null : contextParams(r.contextPhase());
    String finish = finishReason(r);
    long created = System.currentTimeMillis() / 1000;
    TokenIds promptIds = ctxParams != null ? TokenIds.of(prompt) : null;
    if (body instanceof ChatCompletionRequest chat) {
      // asked for base64 int32 ids (TensorRT-LLM's return_prompt_token_ids_b64): the string instead of the array
      boolean b64 = promptIds != null && body.disaggregatedParams() != null
          && Boolean.TRUE.equals(body.disaggregatedParams().returnPromptTokenIdsB64());
      return new ChatCompletionResponse("chatcmpl-" + requestId, "chat.completion", created, chat.model(),
          List.of(new ChatChoice(0, ChatMessage.of("assistant", text), null, finish, null, ctxParams, Map.of())),
          usage(r), b64 ? null : promptIds, b64 ? promptIds.toBase64() : null, Map.of());
    }
    return new CompletionResponse("cmpl-" + requestId, "text_completion", created, body.model(),
        List.of(new CompletionChoice(0, text, null, null, finish, null, ctxParams, Map.of())), usage(r), promptIds,
        Map.of());
  }

  private static String finishReason(ExecutorResponse r) {
    return switch (r.finishReason()) {
      case END_ID, STOP -> "stop";
      default -> "length";
    };
  }

  private UsageInfo usage(ExecutorResponse r) {
    int completion = output.size();
    return new UsageInfo(r.metrics().promptTokens(), completion, r.metrics().promptTokens() + completion,
        r.metrics().reusedTokens());
  }
}
