package dev.affinity.server.http;

import dev.affinity.frontend.ClientSink;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.worker.EncodedChunk;
import dev.affinity.worker.EncodedResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link ClientSink} of one {@link HttpExchange}: callable from any thread. Each call serializes its JSON on the
 * caller's thread, then hands the write to the exchange's event loop in call order ({@link HttpExchange#onLoop}),
 * where the exchange's state lives.
 */
final class ExchangeSink implements ClientSink {
  private static final Logger LOG = LoggerFactory.getLogger(ExchangeSink.class);

  private final HttpExchange exchange;

  ExchangeSink(HttpExchange exchange) {
    this.exchange = exchange;
  }

  /**
   * A whole response in its client's form: the OpenAI endpoints write its JSON ({@link EncodedResponse#json}, for a
   * worker's answer over HTTP the bytes copied from it); an endpoint that reshapes the answer reads its records.
   */
  @Override
  public void respondEncoded(EncodedResponse response, RouteInfo routeInfo) {
    Objects.requireNonNull(response, "response");
    if (!exchange.answersAsIs()) {
      OpenAiResponse records = response.parsed();
      respondJson(() -> exchange.context().codec.toJsonBytes(exchange.answerFormat().apply(records)), routeInfo);
      return;
    }
    respondJson(() -> response.json(exchange.context().codec), routeInfo);
  }

  /** A whole answer, HTTP 200, with the JSON {@code body} writes; a 500 when it cannot be written. */
  private void respondJson(Supplier<byte[]> body, RouteInfo routeInfo) {
    byte[] json;
    try {
      json = body.get();
    } catch (RuntimeException e) {
      LOG.error("request {}: cannot serialize the response", exchange.meta().localId(), e);
      fail(500, exchange.internalError(), routeInfo);
      return;
    }
    exchange.onLoop(() -> exchange.writeFull(HttpResponseStatus.OK, ResponseHeaders.JSON, json, routeInfo, Map.of(),
        false, null));
  }

  @Override
  public void streamStart(RouteInfo routeInfo) {
    exchange.onLoop(() -> exchange.streamStartOnLoop(routeInfo));
  }

  @Override
  public void streamEncoded(EncodedChunk chunk) {
    Objects.requireNonNull(chunk, "chunk");
    chunk.length();  // an in-process worker's chunk is written to JSON here, off the event loop
    exchange.onLoop(() -> exchange.writeChunk(chunk));
  }

  @Override
  public void streamEnd(RouteInfo routeInfo) {
    exchange.onLoop(() -> exchange.endStream(routeInfo));
  }

  @Override
  public void fail(int status, ErrorResponse error, RouteInfo routeInfo) {
    Objects.requireNonNull(error, "error");
    int code = status;
    if (status < 400 || status > 599) {
      LOG.warn("request {}: fail() with status {} is not an error status; answering 500", exchange.meta().localId(),
          status);
      code = 500;
    }
    byte[] body = exchange.errorBody(code, error);
    int finalCode = code;
    exchange.onLoop(() -> exchange.failOnLoop(finalCode, body, error.error().message(), routeInfo));
  }

  @Override
  public void abort(String reason, RouteInfo routeInfo) {
    exchange.onLoop(() -> exchange.abortOnLoop(reason, routeInfo));
  }

  @Override
  public void onDisconnect(Runnable callback) {
    Objects.requireNonNull(callback, "callback");
    exchange.onLoop(() -> exchange.onDisconnectOnLoop(callback));
  }
}
