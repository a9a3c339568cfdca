package dev.affinity.disagg;

import dev.affinity.protocol.ChatCompletionStreamResponse;
import dev.affinity.protocol.ChatDelta;
import dev.affinity.protocol.ChatStreamChoice;
import dev.affinity.protocol.CompletionChoice;
import dev.affinity.protocol.CompletionRequest;
import dev.affinity.protocol.CompletionStreamResponse;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.protocol.TokenIds;
import dev.affinity.protocol.UsageInfo;
import dev.affinity.worker.EncodedChunk;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * What a streamed answer needs to continue on another generation worker when its worker fails mid-stream: the
 * chunks the client has already received (kept as relayed, parsed only when a resume is planned), the plan of the
 * continuation, and the rewriting that makes the continuation's chunks one stream with what came before.
 *
 * <p>The continuation is a new request whose prompt is the original prompt's token ids followed by the tokens
 * already streamed, with the output limit lowered by their count: its context leg prefills them (mostly from the
 * cache of the worker that held the prompt), its generation leg samples the rest. The client sees the same
 * {@code id} and {@code created} on every chunk, no second {@code role} delta, and usage counted as one answer
 * (the streamed tokens are output, not prompt).
 *
 * <p>The streamed tokens are known exactly when every chunk carried {@code token_ids} (completions streamed with
 * {@code detokenize: false}); otherwise the streamed text is tokenized with the frontend's tokenizer (embedded
 * workers) or by a worker ({@code POST /_internal/tokenize}). A stream is not resumed when a chat delta carried a
 * tool call or reasoning (the visible text is not the whole output), when completions echo the prompt, when a choice
 * other than index 0 streamed ({@code n > 1}), or when the prompt's ids are unknown. Confined to its flow's lock.
 */
final class StreamResume {
  /** What a planned resume does. */
  enum Kind {
    /** continue with {@link Plan#body()} */
    CONTINUE,
    /** the client already has the whole answer (a finish reason, or the output limit): end the stream cleanly */
    FINISHED,
    /** the streamed text must be tokenized first ({@link Plan#text()}) */
    NEEDS_TOKENS,
    /** cannot continue: {@link Plan#reason()} */
    IMPOSSIBLE
  }

  /**
   * A resume's plan.
   *
   * @param body the continuation request (CONTINUE)
   * @param prompt its prompt ids (CONTINUE)
   * @param generated how many streamed tokens it carries
   * @param text the streamed text to tokenize (NEEDS_TOKENS)
   * @param reason why not (IMPOSSIBLE)
   */
  record Plan(Kind kind, OpenAiRequest body, int[] prompt, int generated, String text, String reason) {
    static Plan impossible(String reason) {
      return new Plan(Kind.IMPOSSIBLE, null, null, 0, null, reason);
    }
  }

  /** What the client has received, as relayed. */
  private final List<EncodedChunk> relayed = new ArrayList<>();
  private int[] originalPrompt;
  private String streamId;
  private Long created;
  /** Streamed tokens the current continuation carries in its prompt; -1 before the first resume. */
  private int carried = -1;
  /** Whether the current continuation has relayed a chunk yet (its first chat chunk repeats the role). */
  private boolean continuationStarted;

  void record(EncodedChunk chunk) {
    relayed.add(chunk);
  }

  boolean resumed() {
    return carried >= 0;
  }

  /**
   * Plans the continuation of {@code client}'s stream.
   *
   * @param prompt the original prompt's ids (kept from the first resume on), or null when unknown
   * @param streamedIds the streamed text's ids when a tokenizer gave them, else null
   */
  Plan plan(OpenAiRequest client, int[] prompt, int[] streamedIds) {
    if (originalPrompt == null) {
      originalPrompt = prompt;
    }
    if (originalPrompt == null) {
      return Plan.impossible("the prompt's token ids are unknown");
    }
    if (client instanceof CompletionRequest c && Boolean.TRUE.equals(c.echo())) {
      return Plan.impossible("completions with echo repeat the prompt");
    }
    Streamed s;
    try {
      s = streamed();
    } catch (ProtocolException e) {
      return Plan.impossible("a streamed chunk could not be read: " + e.getMessage());
    }
    if (s.impossible != null) {
      return Plan.impossible(s.impossible);
    }
    if (s.finished) {
      return new Plan(Kind.FINISHED, null, null, 0, null, null);
    }
    int[] ids = s.ids != null ? s.ids.stream().flatMapToInt(Arrays::stream).toArray() : streamedIds;
    if (ids == null) {
      return new Plan(Kind.NEEDS_TOKENS, null, null, 0, s.text.toString(), null);
    }
    Integer limit = client.maxOutputTokens().orElse(null);
    if (limit != null && ids.length >= limit) {
      return new Plan(Kind.FINISHED, null, null, 0, null, null);
    }
    int[] continued = new int[originalPrompt.length + ids.length];
    System.arraycopy(originalPrompt, 0, continued, 0, originalPrompt.length);
    System.arraycopy(ids, 0, continued, originalPrompt.length, ids.length);
    OpenAiRequest body = client.continuation(TokenIds.of(continued), limit == null ? null : limit - ids.length);
    return new Plan(Kind.CONTINUE, body, continued, ids.length, null, null);
  }

  /** The continuation of {@code plan} starts now: its chunks are rewritten from here on. */
  void start(Plan plan) {
    carried = plan.generated();
    continuationStarted = false;
  }

  /**
   * A continuation's chunk as the client's stream goes on: its id and created time, no repeated role, usage with
   * the carried tokens counted as output. Null when nothing is left to send (a bare role delta).
   */
  OpenAiStreamChunk rewrite(OpenAiStreamChunk chunk) {
    boolean first = !continuationStarted;
    continuationStarted = true;
    UsageInfo usage = chunk.usage() == null ? null : carriedAsOutput(chunk.usage());
    String id = streamId != null ? streamId : chunk.id();
    if (chunk instanceof CompletionStreamResponse c) {
      return new CompletionStreamResponse(id, c.object(), created != null ? created : c.created(), c.model(),
          c.choices(), usage, c.extra());
    }
    ChatCompletionStreamResponse c = (ChatCompletionStreamResponse) chunk;
    List<ChatStreamChoice> choices = first ? c.choices().stream().map(StreamResume::withoutRole).toList() : c.choices();
    if (first && usage == null && !choices.isEmpty() && choices.stream().allMatch(StreamResume::empty)) {
      return null;
    }
    return new ChatCompletionStreamResponse(id, c.object(), created != null ? created : c.created(), c.model(), choices,
        usage, c.extra());
  }

  private UsageInfo carriedAsOutput(UsageInfo u) {
    int prompt = u.promptTokens() == null ? 0 : Math.max(0, u.promptTokens() - carried);
    int completion = (u.completionTokens() == null ? 0 : u.completionTokens()) + carried;
    return new UsageInfo(prompt, completion, prompt + completion, Math.min(u.cachedTokensOrZero(), prompt));
  }

  private static ChatStreamChoice withoutRole(ChatStreamChoice c) {
    ChatDelta d = c.delta();
    if (d == null || d.role() == null) {
      return c;
    }
    return new ChatStreamChoice(c.index(), new ChatDelta(null, d.content(), d.reasoning(), d.reasoningContent(),
        d.toolCalls(), d.extra()), c.logprobs(), c.finishReason(), c.stopReason(), c.extra());
  }

  private static boolean empty(ChatStreamChoice c) {
    ChatDelta d = c.delta();
    return c.finishReason() == null && (d == null || (d.role() == null && (d.content() == null || d.content().isEmpty())
        && d.reasoning() == null && d.reasoningContent() == null && (d.toolCalls() == null || d.toolCalls().isEmpty()) && d.extra().isEmpty()));
  }

  /** What the relayed chunks add up to. */
  private static final class Streamed {
    final StringBuilder text = new StringBuilder();
    /** The chunks' own token ids, in order; null once a chunk carried text without them. */
    List<int[]> ids = new ArrayList<>();
    boolean finished;
    String impossible;
  }

  private Streamed streamed() {
    Streamed s = new Streamed();
    for (EncodedChunk e : relayed) {
      OpenAiStreamChunk chunk = e.parsed();
      if (streamId == null) {
        streamId = chunk.id();
        created = chunk instanceof CompletionStreamResponse c ? c.created()
            : ((ChatCompletionStreamResponse) chunk).created();
      }
      if (chunk instanceof CompletionStreamResponse c) {
        for (CompletionChoice choice : c.choices()) {
          if (!first(choice.index(), s)) {
            return s;
          }
          String text = Objects.requireNonNullElse(choice.text(), "");
          s.text.append(text);
          if (choice.tokenIds() != null && s.ids != null) {
            s.ids.add(choice.tokenIds().toArray());
          } else if (!text.isEmpty()) {
            s.ids = null;  // text without ids: they must come from a tokenizer
          }
          s.finished |= choice.finishReason() != null;
        }
      } else {
        for (ChatStreamChoice choice : ((ChatCompletionStreamResponse) chunk).choices()) {
          if (!first(choice.index(), s)) {
            return s;
          }
          ChatDelta d = choice.delta();
          if (d != null && ((d.toolCalls() != null && !d.toolCalls().isEmpty()) || d.reasoning() != null || d.reasoningContent() != null)) {
            s.impossible = "the stream carried a tool call or reasoning";
            return s;
          }
          if (d != null && d.content() != null) {
            s.text.append(d.content());
          }
          s.finished |= choice.finishReason() != null;
        }
        if (s.text.length() > 0) {
          s.ids = null;  // chat chunks carry no ids
        }
      }
    }
    return s;
  }

  private static boolean first(Integer index, Streamed s) {
    if (index != null && index != 0) {
      s.impossible = "more than one choice streamed (n > 1)";
      return false;
    }
    return true;
  }
}
