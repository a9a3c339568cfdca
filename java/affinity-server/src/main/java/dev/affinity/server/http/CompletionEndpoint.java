package dev.affinity.server.http;

import dev.affinity.admission.RequestRejectedException;
import dev.affinity.conversation.HeaderSource;
import dev.affinity.conversation.InvalidHeaderException;
import dev.affinity.frontend.AdmittedRequest;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.ProtocolException;
import io.netty.handler.codec.http.HttpHeaders;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code POST /v1/completions} and {@code /v1/chat/completions}: readiness (503), the body (400 naming the
 * field), then admission (the client rules, the model, the routing headers and the prompt's tokens; a 4xx
 * naming the field or header), then the handoff of the admitted request to the handler.
 */
final class CompletionEndpoint {
  private static final Logger LOG = LoggerFactory.getLogger(CompletionEndpoint.class);

  private final FrontendContext fc;

  CompletionEndpoint(FrontendContext fc) {
    this.fc = fc;
  }

  /** On the event loop; answers through {@code exchange} now (a rejection) or later (the handler). */
  void serve(HttpExchange exchange, byte[] body) {
    if (!fc.backend.ready()) {
      exchange.sendError(503, ErrorResponse.of(503, "cluster is not ready", null));
      return;
    }
    boolean chat = exchange.meta().endpoint() == Endpoint.CHAT_COMPLETIONS;
    AdmittedRequest admitted;
    try {
      HeaderSource headers = headerSource(exchange.meta().headers());
      byte[] json = fc.backend.requestBody(body, headers);
      OpenAiRequest request = chat ? fc.codec.parseChatCompletionRequest(json) : fc.codec.parseCompletionRequest(json);
      admitted = fc.admission.admit(request, headers);
    } catch (ProtocolException e) {
      exchange.sendError(e.status(), e.toErrorResponse());
      return;
    } catch (RequestRejectedException e) {
      exchange.sendError(e.status(), e.error());
      return;
    }
    exchange.describe(admitted.request().model(), admitted.request().isStreaming());
    try {
      fc.backend.handler().handle(admitted, exchange);
    } catch (ProtocolException e) {  // a handler may refuse what admission let through, naming the field
      exchange.fail(e.status(), e.toErrorResponse(), null);
    } catch (InvalidHeaderException e) {
      exchange.fail(400, ErrorResponse.of(400, e.getMessage(), e.header()), null);
    } catch (RuntimeException e) {
      LOG.error("request {}: the completion handler failed", exchange.meta().localId(), e);
      exchange.fail(500, exchange.internalError(), null);
    }
  }

  /** Netty's headers are matched case-insensitively; the first value wins. */
  static HeaderSource headerSource(HttpHeaders headers) {
    return headers::get;
  }
}
