package dev.affinity.disagg;

import dev.affinity.protocol.ChatChoice;
import dev.affinity.protocol.ChatCompletionResponse;
import dev.affinity.protocol.ChatCompletionStreamResponse;
import dev.affinity.protocol.ChatDelta;
import dev.affinity.protocol.ChatStreamChoice;
import dev.affinity.protocol.CompletionChoice;
import dev.affinity.protocol.CompletionResponse;
import dev.affinity.protocol.CompletionStreamResponse;
import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.protocol.OpenAiStreamChunk;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Turns a whole response into the chunks a streaming client expects: used when the context leg
 * already finished the request (upstream sends a bare {@code [DONE]} there, losing the first token).
 */
public final class StreamConversion {
  private StreamConversion() {}

  public static List<OpenAiStreamChunk> toChunks(OpenAiResponse response) {
    List<OpenAiStreamChunk> out = new ArrayList<>();
    if (response instanceof ChatCompletionResponse r) {
      List<ChatStreamChoice> content = new ArrayList<>();
      List<ChatStreamChoice> finish = new ArrayList<>();
      for (ChatChoice c : r.choices()) {
        String text = c.message() == null ? "" : c.message().contentText();
        content.add(new ChatStreamChoice(c.index(), new ChatDelta("assistant", text, null, null, null, Map.of()), null, null,
            null, Map.of()));
        finish.add(new ChatStreamChoice(c.index(), new ChatDelta(null, null, null, null, null, Map.of()), null,
            c.finishReason(), c.stopReason(), Map.of()));
      }
      out.add(new ChatCompletionStreamResponse(r.id(), "chat.completion.chunk", r.created(), r.model(), content, null, Map.of()));
      out.add(new ChatCompletionStreamResponse(r.id(), "chat.completion.chunk", r.created(), r.model(), finish, r.usage(), Map.of()));
    } else {
      CompletionResponse r = (CompletionResponse) response;
      List<CompletionChoice> choices = new ArrayList<>();
      for (CompletionChoice c : r.choices()) {
        choices.add(new CompletionChoice(c.index(), c.text(), null, c.logprobs(), c.finishReason(), c.stopReason(), null,
            Map.of()));
      }
      out.add(new CompletionStreamResponse(r.id(), "text_completion", r.created(), r.model(), choices, r.usage(), Map.of()));
    }
    return out;
  }
}
