package dev.affinity.server.worker;

import dev.affinity.protocol.CompletionChoice;
import dev.affinity.protocol.CompletionStreamResponse;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.protocol.UsageInfo;
import dev.affinity.worker.WorkerFailure;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Flow;

/**
 * Reads a worker's server-sent events line by line (the JDK client splits lines at CR, LF or CRLF) and
 * hands every {@code data:} event to the call as a parsed chunk, in order; {@code data: [DONE]} ends the
 * call. Follows the SSE rules trtllm-serve relies on: an event ends at a blank line, several
 * {@code data:} lines join with a newline, one space after the colon is dropped, comments ({@code :...})
 * and other fields are ignored, events with an {@code event:} type other than {@code message} are
 * skipped. Pulls one line at a time, so a slow listener slows the socket instead of buffering.
 */
final class SseStream implements Flow.Subscriber<String> {
  static final String DONE = "[DONE]";

  private final HttpCall call;
  private final ProtocolCodec codec;
  private final boolean chat;
  private final StringBuilder data = new StringBuilder();
  private boolean hasData;
  private String eventType;
  private boolean done;
  private Flow.Subscription subscription;
  private UsageInfo lastUsage;
  private Integer rank;

  SseStream(HttpCall call, ProtocolCodec codec, boolean chat) {
    this.call = call;
    this.codec = codec;
    this.chat = chat;
  }

  @Override
  public void onSubscribe(Flow.Subscription s) {
    subscription = s;
    call.attachBody(s);
    s.request(1);
  }

  @Override
  public void onNext(String line) {
    if (!done && !call.isEnded()) {
      line(line);
    }
    subscription.request(1); // after [DONE] keep reading to the end so the connection can be reused
  }

  @Override
  public void onError(Throwable t) {
    call.fail(Failures.of(t));
  }

  @Override
  public void onComplete() {
    if (!done && hasData && !call.isEnded()) {
      dispatch(); // a last event without its blank line
    }
    if (!done) {
      call.fail(WorkerFailure.Kind.RESET, 0, "the stream ended before data: [DONE]");
    }
  }

  private void line(String line) {
    if (line.isEmpty()) {
      if (hasData) {
        dispatch();
      }
      eventType = null;
      return;
    }
    if (line.charAt(0) == ':') {
      return; // comment / keep-alive
    }
    int colon = line.indexOf(':');
    String field = colon < 0 ? line : line.substring(0, colon);
    String value = colon < 0 ? "" : line.substring(colon + 1);
    if (!value.isEmpty() && value.charAt(0) == ' ') {
      value = value.substring(1);
    }
    if (field.equals("data")) {
      if (hasData) {
        data.append('\n');
      }
      data.append(value);
      hasData = true;
    } else if (field.equals("event")) {
      eventType = value;
    }
  }

  private void dispatch() {
    String payload = data.toString();
    data.setLength(0);
    hasData = false;
    String type = eventType;
    eventType = null;
    if (type != null && !type.isEmpty() && !type.equals("message")) {
      return;
    }
    if (payload.strip().equals(DONE)) {
      done = true;
      call.complete(null, HttpWorker.report(lastUsage, rank));
      return;
    }
    OpenAiStreamChunk chunk;
    try {
      byte[] bytes = payload.getBytes(StandardCharsets.UTF_8);
      chunk = chat ? codec.parseChatCompletionStreamChunk(bytes) : codec.parseCompletionStreamChunk(bytes);
    } catch (ProtocolException e) {
      done = true;
      call.fail(WorkerFailure.Kind.PROTOCOL, 0, "unparsable stream chunk: " + e.getMessage());
      return;
    }
    if (chunk.usage() != null) {
      lastUsage = chunk.usage();
    }
    if (chunk instanceof CompletionStreamResponse c && !c.choices().isEmpty()) {
      CompletionChoice first = c.choices().get(0);
      DisaggregatedParams p = first.disaggregatedParams();
      if (p != null && p.ctxDpRank() != null) {
        rank = p.ctxDpRank();
      }
    }
    call.chunk(chunk);
  }
}
