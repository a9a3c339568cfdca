package dev.affinity.server.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.admission.QueueLimit;
import dev.affinity.admission.RequestRejectedException;
import dev.affinity.anthropic.AnthropicRequests;
import dev.affinity.anthropic.AnthropicResponses;
import dev.affinity.anthropic.AnthropicStream;
import dev.affinity.conversation.HeaderSource;
import dev.affinity.conversation.InvalidHeaderException;
import dev.affinity.frontend.AdmittedRequest;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ChatCompletionResponse;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.responses.ResponsesOutput;
import dev.affinity.responses.ResponsesRequests;
import dev.affinity.responses.ResponsesStream;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.util.concurrent.CompletionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code POST /v1/completions}, {@code /v1/chat/completions}, Anthropic's {@code /v1/messages} and OpenAI's
 * {@code /v1/responses}: readiness (503), the body (400 naming the field; a Messages or Responses body is first
 * converted to a chat request, {@link AnthropicRequests}, {@link ResponsesRequests}), then admission (the client
 * rules, the model, the routing headers and the prompt's tokens; a 4xx naming the field or header), then the handoff
 * of the admitted request to the handler. A Messages request is answered as Anthropic's message or event stream
 * ({@link AnthropicStream}), a Responses request as a response object or {@code response.*} event stream
 * ({@link ResponsesOutput}, {@link ResponsesStream}); an error about a converted Responses request names the
 * Responses field ({@link ResponsesRequests#inResponsesTerms}). {@code POST /v1/messages/count_tokens} counts the
 * converted prompt's tokens ({@link FrontendBackend#countTokens}).
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
    Endpoint endpoint = exchange.meta().endpoint();
    boolean chat = endpoint == Endpoint.CHAT_COMPLETIONS;
    AdmittedRequest admitted;
    ObjectNode echo = null;
    try {
      HeaderSource headers = headerSource(exchange.meta().headers());
      byte[] received = fc.backend.requestBody(body, headers);
      OpenAiRequest request;
      if (chat) {  // a conversation's turn reuses its last body where the bytes agree
        request = fc.admission.keptTurns().parseChat(headers, received, fc.codec);
      } else if (endpoint == Endpoint.MESSAGES) {
        request = fc.admission.keptTurns().parseMessages(headers, received, fc.codec);
      } else {
        byte[] json = dev.affinity.protocol.Utf8.jsonBody(received);
        if (endpoint == Endpoint.MESSAGES_COUNT_TOKENS) {
          countTokens(exchange, AnthropicRequests.toChat(json, fc.codec, true), json);
          return;
        } else if (endpoint == Endpoint.RESPONSES) {
          ResponsesRequests.Converted converted = ResponsesRequests.toChat(json, fc.codec);
          request = converted.chat();
          echo = converted.echo();
        } else {
          request = fc.codec.parseCompletionRequest(json);
        }
      }
      // the work in flight, counted before tokenizing (a queue of huge prompts waiting to be tokenized is work too)
      long tokens = QueueLimit.tokensOf(request);
      String full = fc.queued.tryAcquire(tokens);
      if (full != null) {
        exchange.sendError(503, ErrorResponse.of(503, full, null), java.util.Map.of("Retry-After", "1"), false);
        return;
      }
      exchange.onComplete(() -> fc.queued.release(tokens));
      if (fc.admission.tokenizesLong(request)) {
        admitOffLoop(exchange, request, headers, echo);
        return;
      }
      admitted = fc.admission.admit(request, headers);
    } catch (ProtocolException e) {
      ProtocolException named = endpoint == Endpoint.RESPONSES ? ResponsesRequests.inResponsesTerms(e) : e;
      exchange.sendError(named.status(), named.toErrorResponse());
      return;
    } catch (RequestRejectedException e) {
      exchange.sendError(e.status(), inEndpointTerms(endpoint, e));
      return;
    }
    proceed(exchange, admitted, echo);
  }

  /**
   * A long prompt is admitted (tokenized) on the tokenizing threads, then handed to the handler on the exchange's
   * loop: the loop goes on serving its other connections meanwhile.
   */
  private void admitOffLoop(HttpExchange exchange, OpenAiRequest request, HeaderSource headers, ObjectNode echo) {
    try {
      fc.tokenizing().execute(() -> {
        AdmittedRequest admitted;
        try {
          admitted = fc.admission.admit(request, headers);
        } catch (RequestRejectedException e) {
          exchange.sendErrorLater(e.status(), inEndpointTerms(exchange.meta().endpoint(), e));
          return;
        } catch (RuntimeException e) {
          LOG.error("request {}: admission failed", exchange.meta().localId(), e);
          exchange.sendErrorLater(500, exchange.internalError());
          return;
        }
        exchange.onLoop(() -> proceed(exchange, admitted, echo));
      });
    } catch (java.util.concurrent.RejectedExecutionException e) {
      exchange.sendError(503, ErrorResponse.of(503, "the frontend is shutting down", null));
    }
  }

  /**
   * An admission refusal's body: on {@code /v1/responses} a chat field (a template's refusal of {@code messages}, the
   * prompt bound) is named by its Responses path ({@link ResponsesRequests#inResponsesTerms}).
   */
  private static ErrorResponse inEndpointTerms(Endpoint endpoint, RequestRejectedException e) {
    ProtocolException cause = e.protocolError();
    return endpoint == Endpoint.RESPONSES && cause != null
        ? ResponsesRequests.inResponsesTerms(cause).toErrorResponse() : e.error();
  }

  /** An admitted request: its answer's format, then the handler. On the exchange's loop. */
  private void proceed(HttpExchange exchange, AdmittedRequest admitted, ObjectNode echo) {
    Endpoint endpoint = exchange.meta().endpoint();
    exchange.describe(admitted.request().model(), admitted.request().isStreaming());
    if (endpoint == Endpoint.MESSAGES) {
      String model = admitted.request().model();
      exchange.streamFormat(() -> new AnthropicStream(model));
    } else if (endpoint == Endpoint.RESPONSES) {
      ObjectNode responseEcho = echo;
      exchange.streamFormat(() -> new ResponsesStream(responseEcho));
      exchange.answerFormat(r -> ResponsesOutput.toResponse((ChatCompletionResponse) r, responseEcho));
    }
    exchange.processing(admitted.request().isStreaming());
    try {
      fc.backend.handler().handle(admitted, exchange.sink());
    } catch (ProtocolException e) {  // a handler may refuse what admission let through, naming the field
      ProtocolException named = endpoint == Endpoint.RESPONSES ? ResponsesRequests.inResponsesTerms(e) : e;
      exchange.sink().fail(named.status(), named.toErrorResponse(), null);
    } catch (InvalidHeaderException e) {
      exchange.sink().fail(400, ErrorResponse.of(400, e.getMessage(), e.header()), null);
    } catch (RuntimeException e) {
      LOG.error("request {}: the completion handler failed", exchange.meta().localId(), e);
      exchange.sink().fail(500, exchange.internalError(), null);
    }
  }

  /** {@code count_tokens}: the model (404), then the backend's count, answered as {@code {"input_tokens": n}}. */
  private void countTokens(HttpExchange exchange, ChatCompletionRequest request, byte[] anthropicBody) {
    if (!fc.serves(request.model())) {
      exchange.sendError(404, ErrorResponse.of(404, "The model `" + request.model() + "` does not exist.", "model"));
      return;
    }
    exchange.describe(request.model(), false);
    fc.backend.countTokens(request, anthropicBody).whenComplete((count, error) -> {
      if (error == null) {
        exchange.sendJsonLater(HttpResponseStatus.OK, fc.codec.toJsonBytes(AnthropicResponses.tokenCount(count)));
        return;
      }
      Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
      if (cause instanceof ProtocolException e) {
        exchange.sendErrorLater(e.status(), e.toErrorResponse());
      } else {
        LOG.error("request {}: counting tokens failed", exchange.meta().localId(), cause);
        exchange.sendErrorLater(500, exchange.internalError());
      }
    });
  }

  /** Netty's headers are matched case-insensitively; the first value wins. */
  static HeaderSource headerSource(HttpHeaders headers) {
    return headers::get;
  }
}
