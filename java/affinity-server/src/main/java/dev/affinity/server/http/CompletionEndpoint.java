package dev.affinity.server.http;

import dev.affinity.admission.ClientRequestGuard;
import dev.affinity.conversation.HeaderSource;
import dev.affinity.conversation.InvalidHeaderException;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.CompletionRequest;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.ProtocolException;
import io.netty.handler.codec.http.HttpHeaders;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code POST /v1/completions} and {@code /v1/chat/completions}: everything a request must pass before
 * the handler sees it (readiness, body, client rules, model, routing headers), then the handoff.
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
    HeaderSource headers = headerSource(exchange.meta().headers());
    OpenAiRequest request;
    try {
      request = parse(chat, body);
      if (!fc.serves(request.model())) {
        exchange.sendError(404, ErrorResponse.of(404, "The model `" + request.model() + "` does not exist.", "model"));
        return;
      }
      String bodyId = chat ? ClientRequestGuard.bodyConversationId((ChatCompletionRequest) request)
          : ClientRequestGuard.bodyConversationId((CompletionRequest) request);
      fc.routingCheck.resolve(bodyId, headers); // throws InvalidHeaderException
    } catch (ProtocolException e) {
      exchange.sendError(e.status(), e.toErrorResponse());
      return;
    } catch (InvalidHeaderException e) {
      exchange.sendError(400, headerError(e));
      return;
    }
    exchange.describe(request.model(), request.isStreaming());
    try {
      fc.backend.handler().handle(request, headers, exchange);
    } catch (InvalidHeaderException e) {
      exchange.fail(400, headerError(e), null);
    } catch (ProtocolException e) {
      exchange.fail(e.status(), e.toErrorResponse(), null);
    } catch (RuntimeException e) {
      LOG.error("request {}: the completion handler failed", exchange.meta().localId(), e);
      exchange.fail(500, exchange.internalError(), null);
    }
  }

  /** The parsed body, refused (400) when it breaks the public API's rules. */
  private OpenAiRequest parse(boolean chat, byte[] body) {
    if (chat) {
      ChatCompletionRequest c = fc.codec.parseChatCompletionRequest(body);
      fc.guard.check(c);
      if (c.chatTemplate() != null && !fc.options.allowRequestChatTemplate()) {
        throw ProtocolException.invalidField("chat_template",
            "a chat template in the request is not accepted (set allow_request_chat_template: true to accept it)");
      }
      return c;
    }
    CompletionRequest c = fc.codec.parseCompletionRequest(body);
    fc.guard.check(c);
    return c;
  }

  private static ErrorResponse headerError(InvalidHeaderException e) {
    return ErrorResponse.of(400, e.getMessage(), e.header());
  }

  /** Netty's headers are matched case-insensitively; the first value wins. */
  static HeaderSource headerSource(HttpHeaders headers) {
    return headers::get;
  }
}
