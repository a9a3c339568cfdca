package dev.affinity.bench.sim;

import dev.affinity.bench.drive.OutgoingRequest;
import dev.affinity.bench.drive.RequestTransport;
import dev.affinity.bench.metrics.RequestRecord;
import dev.affinity.bench.trace.BlockTokens;
import dev.affinity.bench.trace.TraceRequest;
import dev.affinity.conversation.HeaderSource;
import dev.affinity.disagg.DisaggService;
import dev.affinity.executor.ExecutorResponse;
import dev.affinity.frontend.ClientSink;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.protocol.CompletionRequest;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.protocol.Prompt;
import dev.affinity.protocol.StreamOptions;
import dev.affinity.protocol.TokenIds;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Sends a driver's requests straight into a simulated fleet's admission and {@link DisaggService}, as the
 * HTTP frontend would (with several frontends, to each in turn, as a load balancer would): a completion with the prompt as token ids (from {@link BlockTokens}) and the
 * headers a real agent sends (its own session id; its parent's on a sub-agent). The client side of
 * each request is recorded in virtual time.
 *
 * <p>Streaming requests (usage in the last chunk) time the first token by the first chunk. Whole
 * responses are much cheaper to simulate (one response per request instead of one per token); their
 * first token is the time the executor that produced it reports (the executors run on the same
 * virtual clock), which is when the first chunk would have left it.
 */
public final class SimTransport implements RequestTransport {
  private final List<SimFleet.Frontend> frontends;
  /** The frontend the next request goes to (round robin by arrival, as a load balancer hands them out). */
  private int nextFrontend;
  private final VirtualScheduler clock;
  private final BlockTokens blockTokens;
  private final String model;
  private final String sessionHeader;
  private final String parentHeader;
  private final boolean stream;
  /** Request id -> when its first token was produced (whole responses only). */
  private final Map<Long, Long> firstTokenUs = new HashMap<>();

  /**
   * @param sessionHeader the header that carries an agent's own session id
   * @param parentHeader  the header that carries a sub-agent's parent session id
   */
  public SimTransport(SimFleet fleet, BlockTokens blockTokens, String model, String sessionHeader, String parentHeader,
      boolean stream) {
    this.frontends = fleet.frontends();
    this.clock = fleet.clock();
    this.blockTokens = blockTokens;
    this.model = model;
    this.sessionHeader = sessionHeader;
    this.parentHeader = parentHeader;
    this.stream = stream;
  }

  /**
   * Sees every final executor response: remembers when the request's first token was produced (a
   * generation leg's answer replaces its context leg's).
   */
  public void onExecutorResponse(ExecutorResponse r) {
    if (!stream && r.isFinal() && !r.isError() && r.metrics().firstTokenUs() >= 0) {
      firstTokenUs.put(r.clientRequestId(), r.metrics().firstTokenUs());
    }
  }

  @Override
  public void send(OutgoingRequest out, Consumer<RequestRecord> done) {
    TraceRequest r = out.request();
    CompletionRequest body = CompletionRequest.builder(model, Prompt.tokens(TokenIds.of(blockTokens.tokens(r))))
        .maxTokens(r.outputLength()).stream(stream).streamOptions(stream ? new StreamOptions(true, null) : null).build();
    Map<String, String> headers = new HashMap<>();
    if (r.sessionId() != null) {
      headers.put(sessionHeader, r.sessionId());
    }
    if (r.parentSessionId() != null) {
      headers.put(parentHeader, r.parentSessionId());
    }
    SimFleet.Frontend frontend = frontends.get(nextFrontend);
    nextFrontend = (nextFrontend + 1) % frontends.size();
    DisaggService service = frontend.orchestration().service();
    frontend.admission().admitAndHandle(body, HeaderSource.of(headers), service,
        new Sink(out, clock.nowMicros(), done, service));
  }

  /** The client end of one request. */
  private final class Sink implements ClientSink {
    private final OutgoingRequest out;
    private final long sendUs;
    private final Consumer<RequestRecord> done;
    private long firstUs = -1;
    private int completionTokens;
    private boolean finished;
    private boolean streaming;
    /** The service of the frontend that took the request. */
    private final DisaggService service;

    Sink(OutgoingRequest out, long sendUs, Consumer<RequestRecord> done, DisaggService service) {
      this.out = out;
      this.sendUs = sendUs;
      this.done = done;
      this.service = service;
    }

    @Override
    public void respondEncoded(dev.affinity.worker.EncodedResponse response, RouteInfo route) {
      long now = clock.nowMicros();
      int tokens = response.usage() != null && response.usage().completionTokens() != null ? response.usage().completionTokens() : 0;
      Long first = firstTokenUs.remove(route.requestId());
      end(first == null ? now : Math.max(sendUs, first), now, tokens, route, 200, null);
    }

    @Override
    public void streamStart(RouteInfo route) {
      streaming = true;  // the first chunk, not the headers, is the first token
    }

    @Override
    public void streamEncoded(dev.affinity.worker.EncodedChunk encoded) {
      OpenAiStreamChunk chunk = encoded.parsed();  // an in-process worker's record: nothing is parsed
      if (firstUs < 0) {
        firstUs = clock.nowMicros();
      }
      if (chunk.usage() != null && chunk.usage().completionTokens() != null) {
        completionTokens = chunk.usage().completionTokens();
      }
    }

    @Override
    public void streamEnd(RouteInfo route) {
      long now = clock.nowMicros();
      end(firstUs < 0 ? now : firstUs, now, completionTokens, route, 200, null);
    }

    @Override
    public void fail(int status, ErrorResponse error, RouteInfo route) {
      String message = error.error() == null ? "error " + status : error.error().message();
      if (streaming) {
        abort(message, route);  // a stream ended by an error event: recorded as a cut stream, what it received kept
        return;
      }
      firstTokenUs.remove(route.requestId());
      end(-1, clock.nowMicros(), 0, route, status, message);
    }

    @Override
    public void abort(String reason, RouteInfo route) {
      firstTokenUs.remove(route.requestId());
      end(firstUs, clock.nowMicros(), completionTokens, route, 502, reason);
    }

    @Override
    public void onDisconnect(Runnable callback) {
      // a simulated client never goes away
    }

    private void end(long firstUs, long endUs, int tokens, RouteInfo route, int status, String error) {
      if (finished) {
        return;
      }
      finished = true;
      TraceRequest r = out.request();
      if (status == 200 && r.endedInToolCall() != null && r.sessionId() != null) {
        // the simulated answer's finish reason is its length: the recorded stop reason is the turn's real ending
        service.agents().turnEnded(r.sessionId(), r.endedInToolCall());
      }
      done.accept(new RequestRecord(out.index(), r.sessionId(), r.parentSessionId(), out.agentId(), sendUs,
          firstUs < 0 ? -1 : firstUs - sendUs, endUs - sendUs, tokens, r.inputLength(), route.reusedTokens(),
          out.idealReusedTokens(), out.pooledReusedTokens(), route.ctxWorker(), route.ctxRank(), route.genWorker(), route.genRank(), status, error));
    }
  }
}
