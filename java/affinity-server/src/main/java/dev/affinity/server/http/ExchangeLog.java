package dev.affinity.server.http;

import dev.affinity.frontend.RouteInfo;
import java.time.Instant;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one {@link HttpExchange} tells the access log and the metrics: the route it took, the model it
 * asked for, its timings and the body bytes sent. Event-loop confined, like the exchange.
 */
final class ExchangeLog {
  private static final Logger LOG = LoggerFactory.getLogger(ExchangeLog.class);

  private final FrontendContext fc;
  private final RequestMeta meta;
  /** When the request was read completely. */
  private final long readNanos;

  private RouteInfo route;
  private String model;
  private Boolean stream;
  private long firstNanos = -1;
  private long lastChunkNanos = -1;
  private long bytes;

  ExchangeLog(FrontendContext fc, RequestMeta meta, long readNanos) {
    this.fc = fc;
    this.meta = meta;
    this.readNanos = readNanos;
  }

  /** What the access log reports of a completion request. */
  void describe(String requestModel, boolean streaming) {
    this.model = requestModel;
    this.stream = streaming;
  }

  /** The admitted completion request goes to the orchestration now (upstream's queue latency ends here). */
  void processing(boolean streaming, long now) {
    fc.metrics.processing(streaming, now - readNanos);
  }

  /** The latest route the handler reported; null keeps the one known. */
  void route(RouteInfo routeInfo) {
    if (routeInfo != null) {
      route = routeInfo;
    }
  }

  /** The route for the response headers: the one given now, else the latest known. */
  RouteInfo routeOr(RouteInfo routeInfo) {
    return routeInfo != null ? routeInfo : route;
  }

  /** The orchestration's request id when it assigned one, else the frontend's own. */
  long requestId(RouteInfo r) {
    return r != null && r.requestId() > 0 ? r.requestId() : meta.localId();
  }

  /** A whole response of {@code length} body bytes is sent now; a successful completion's is its TTFT. */
  void wholeResponse(int status, int length, long now) {
    bytes = length;
    if (status < 400 && meta.endpoint() != null && meta.endpoint().isCompletion()) {
      firstNanos = now;
      fc.metrics.ttft(meta.endpointTag(), false, now - readNanos);
    }
  }

  /** A stream chunk of {@code length} bytes is sent now. */
  void chunk(int length, long now) {
    if (firstNanos < 0) {
      firstNanos = now;
      fc.metrics.ttft(meta.endpointTag(), true, now - readNanos);
    } else {
      fc.metrics.interToken(meta.endpointTag(), now - lastChunkNanos);
    }
    lastChunkNanos = now;
    bytes += length;
  }

  /** Body bytes that are not a chunk (the stream's end). */
  void sent(int length) {
    bytes += length;
  }

  /** The exchange is complete: one metrics update and one access log record. */
  void complete(int status, String outcome, String error, long nowNanos) {
    long total = nowNanos - readNanos;
    fc.metrics.finished(meta.endpointTag(), status, outcome, total, bytes);
    if (meta.endpoint() != null && meta.endpoint().isCompletion()) {
      fc.metrics.completionAnswered(status);
    }
    AccessLog accessLog = fc.options.accessLog();
    if (!accessLog.enabled()) {
      return;
    }
    try {
      accessLog.log(record(status, outcome, error, total));
    } catch (RuntimeException e) {
      LOG.warn("the access log failed", e);
    }
  }

  private AccessRecord record(int status, String outcome, String error, long totalNanos) {
    RouteInfo r = route;
    return new AccessRecord(
        Instant.ofEpochMilli(meta.wallMillis()).toString(),
        requestId(r),
        meta.method(),
        RequestMeta.loggablePath(meta.path()),
        status,
        outcome,
        model,
        stream,
        r == null ? null : r.conversationId(),
        r == null ? null : r.affinityId(),
        r == null ? null : r.ctxKey(),
        r == null ? null : r.genKey(),
        r == null ? null : r.ctxWorker(),
        r == null || r.ctxRank() < 0 ? null : r.ctxRank(),
        r == null ? null : r.genWorker(),
        r == null || r.genRank() < 0 ? null : r.genRank(),
        r == null || r.reusedTokens() < 0 ? null : r.reusedTokens(),
        firstNanos < 0 ? null : millis(firstNanos - readNanos),
        millis(totalNanos),
        r == null ? 0 : r.retries(),
        bytes,
        meta.remote(),
        error);
  }

  private static double millis(long nanos) {
    return Math.round(nanos / 1_000.0) / 1_000.0;
  }
}
