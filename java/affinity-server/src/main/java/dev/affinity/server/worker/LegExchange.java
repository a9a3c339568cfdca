package dev.affinity.server.worker;

import dev.affinity.protocol.CompletionStreamResponse;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.protocol.SentPrompt;
import dev.affinity.protocol.UsageInfo;
import dev.affinity.worker.EncodedChunk;
import dev.affinity.worker.EncodedResponse;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerReport;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import java.util.Locale;

/**
 * One request leg on a worker connection: writes it, reads the answer into its {@link HttpCall}. A
 * streamed answer goes through an {@link SseDecoder}; every event is checked ({@link ChunkScanner}) and
 * handed to the listener as the worker's bytes ({@link EncodedChunk}, with the call as the source a slow
 * client pauses); only a chunk carrying {@code usage} or {@code disaggregated_params} is parsed, for the
 * report. A whole answer is collected and scanned in one pass ({@link EncodedResponse#read}): what the report and
 * the orchestration read is taken out and, unless the leg is context-only, the answer is copied into the client's
 * JSON on the way, so no records are built; an answer the scan does not vouch for is parsed. Error statuses become failures ({@link Failures}).
 * A connection that breaks before the answer is complete ends the call with a RESET (retryable while
 * nothing was delivered: the orchestration tries another worker); a leg is never written twice, since a
 * POST may have started work on the worker. Runs on the connection's loop.
 */
final class LegExchange extends Exchange implements ConnectionPool.Handout {
  private static final String EVENT_STREAM = "text/event-stream";

  private final HttpCall call;
  private final RequestTemplate request;
  private final ConnectionPool pool;
  private final EventLoop loop;
  private final ProtocolCodec codec;
  private final boolean streaming;
  private final boolean chat;
  /** Whether a whole answer goes to the client (a context-only leg's is only read): copied as it is scanned. */
  private final boolean relay;
  /**
   * Whether the leg's KV cache salt did not reach the worker ({@link LegRequests#saltMissed}): the answer's
   * {@code cached_tokens} may count another tenant's blocks, so they read 0.
   */
  private final boolean hideCachedTokens;
  /** The prompt the leg sent as ids (null: text), which a whole answer repeats. */
  private final SentPrompt sentIds;
  private Channel channel;
  private int status;
  private BodyBuffer body;
  private SseDecoder sse;
  private UsageInfo lastUsage;
  private Integer rank;

  LegExchange(HttpCall call, RequestTemplate request, ConnectionPool pool, EventLoop loop, ProtocolCodec codec,
      boolean streaming, boolean chat, boolean relay, boolean hideCachedTokens, SentPrompt sentIds) {
    this.call = call;
    this.request = request;
    this.pool = pool;
    this.loop = loop;
    this.codec = codec;
    this.streaming = streaming;
    this.chat = chat;
    this.relay = relay;
    this.hideCachedTokens = hideCachedTokens;
    this.sentIds = sentIds;
  }

  /** Takes a connection and sends the leg. */
  void start() {
    pool.acquire(loop, this);
  }

  // ---- the connection ----

  @Override
  public void acquired(Channel ch, boolean reused) {
    if (!call.attach(ch)) {
      pool.release(ch, true); // the call ended while it waited: the connection was not used
      return;
    }
    channel = ch;
    try {
      ExchangeHandler.of(ch).start(this, request);
    } catch (RuntimeException e) {  // a leg's JSON is written here, into the write's buffer, and it could not be
      call.fail(WorkerFailure.Kind.PROTOCOL, 0, "cannot build the request: " + e);
    }
  }

  @Override
  public void failed(Throwable cause) {
    call.fail(Failures.of(cause));
  }

  // ---- the answer ----

  @Override
  void onHead(HttpResponse head) {
    status = head.status().code();
    if (status < 200 || status >= 300) {
      body = new BodyBuffer(); // the error text
      return;
    }
    String type = head.headers().get(HttpHeaderNames.CONTENT_TYPE, "").toLowerCase(Locale.ROOT);
    boolean eventStream = type.contains(EVENT_STREAM);
    if (streaming && !type.isEmpty() && !eventStream) {
      call.fail(WorkerFailure.Kind.PROTOCOL, status, "expected " + EVENT_STREAM + " for a streaming request, got " + type);
    } else if (!streaming && eventStream) {
      call.fail(WorkerFailure.Kind.PROTOCOL, status, "received an event stream although the request is not streaming");
    } else if (streaming) {
      sse = new SseDecoder(new SseDecoder.Events() {
        @Override
        public boolean event(byte[] event) {
          return chunk(event);
        }

        @Override
        public void done() {
          call.complete(null, workerReport(lastUsage, rank));
        }
      });
    } else {
      body = new BodyBuffer(HttpUtil.getContentLength(head, -1L));
    }
  }

  @Override
  void onContent(ByteBuf content) {
    if (call.isEnded()) {
      return; // after data: [DONE], the rest of the body is read and dropped
    }
    try {
      if (sse != null) {
        sse.feed(content);
      } else if (body != null) {
        body.append(content);
      }
    } catch (ProtocolException e) {
      call.fail(WorkerFailure.Kind.PROTOCOL, status, e.getMessage());
    }
  }

  /** One event: checked, then delivered as bytes; false once the call has ended. */
  private boolean chunk(byte[] event) {
    EncodedChunk chunk = EncodedChunk.ofSseEvent(event, chat, codec, call);
    try {
      if (ChunkScanner.scan(event, 6, event.length - 8)) {
        OpenAiStreamChunk parsed = chunk.parsed();
        if (hideCachedTokens && CachedTokens.told(parsed.usage())) {
          parsed = CachedTokens.hidden(parsed);
          chunk = EncodedChunk.of(parsed, codec.toJsonBytes(parsed));
        }
        report(parsed);
      }
    } catch (ProtocolException e) {
      call.fail(WorkerFailure.Kind.PROTOCOL, 0, "unparsable stream chunk: " + e.getMessage());
      return false;
    }
    return call.chunk(chunk);
  }

  /** What the report takes from a chunk: the last usage, a context's rank. */
  private void report(OpenAiStreamChunk chunk) {
    if (chunk.usage() != null) {
      lastUsage = chunk.usage();
    }
    if (chunk instanceof CompletionStreamResponse c && !c.choices().isEmpty()) {
      DisaggregatedParams p = c.choices().get(0).disaggregatedParams();
      if (p != null && p.ctxDpRank() != null) {
        rank = p.ctxDpRank();
      }
    }
  }

  @Override
  boolean onEnd() {
    boolean ended = call.isEnded(); // completed at [DONE], or given up (its connection is closed then)
    call.detach(channel); // the answer is complete: the connection may serve another exchange
    if (ended) {
      return true;
    }
    if (status < 200 || status >= 300) {
      call.fail(Failures.ofStatus(status, body == null ? null : body.toArray(), codec));
    } else if (sse != null) {
      sse.finish();
      call.fail(WorkerFailure.Kind.RESET, status, "the stream ended before data: [DONE]");
    } else if (body != null) {
      complete(body.toArray());
    }
    return true;
  }

  /** A whole answer: scanned (and on a leg that answers the client, relayed) in one pass, or parsed. */
  private void complete(byte[] bytes) {
    EncodedResponse answer;
    try {
      answer = EncodedResponse.read(bytes, chat, relay, codec, sentIds);
      if (hideCachedTokens && CachedTokens.told(answer.usage())) {
        answer = EncodedResponse.of(CachedTokens.hidden(answer.parsed()));
      }
    } catch (ProtocolException e) {
      call.fail(WorkerFailure.Kind.PROTOCOL, status, "unparsable response: " + e.getMessage());
      return;
    }
    Integer ctxRank = answer.firstDisaggregatedParams().map(DisaggregatedParams::ctxDpRank).orElse(null);
    call.complete(answer, workerReport(answer.usage(), ctxRank));
  }

  @Override
  void onFailure(Throwable cause) {
    call.fail(Failures.of(cause));
  }

  /** What the worker reports it did: ctx_dp_rank, cached and prompt tokens (-1 where absent). */
  static WorkerReport workerReport(UsageInfo usage, Integer rank) {
    int prompt = usage == null || usage.promptTokens() == null ? -1 : usage.promptTokens();
    int cached = usage == null || usage.promptTokensDetails() == null
        || usage.promptTokensDetails().cachedTokens() == null ? -1 : usage.promptTokensDetails().cachedTokens();
    return new WorkerReport(rank == null ? -1 : rank, cached, prompt, -1);
  }
}
