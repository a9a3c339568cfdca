package dev.affinity.server.worker;

import com.fasterxml.jackson.databind.JsonNode;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** What a worker's answers to the control calls with a body mean: {@code count_tokens} and {@code _internal/tokenize}. */
final class ControlAnswers {
  private static final Logger LOG = LoggerFactory.getLogger(ControlAnswers.class);

  private ControlAnswers() {}

  /**
   * The {@code input_tokens} of worker {@code id}'s answer to {@code POST /v1/messages/count_tokens}, or a
   * {@link ProtocolException} carrying the worker's status and its error's message (never the worker's address), or
   * 502 when there is no answer ({@code error}) or it cannot be read.
   */
  static int inputTokens(String id, ProtocolCodec codec, ControlExchange.Answer a, Throwable error) {
    if (error != null) {
      LOG.warn("worker {}: count_tokens failed: {}", id, error.toString());
      throw ProtocolException.of(502, "the context worker did not answer count_tokens", null);
    }
    JsonNode answer;
    try {
      answer = codec.readTree(a.body());
    } catch (ProtocolException e) {
      LOG.warn("worker {}: count_tokens answered {} with a body that is not JSON", id, a.status());
      throw ProtocolException.of(502, "the context worker answered count_tokens with status " + a.status()
          + " and a body that is not JSON", null);
    }
    if (a.status() == 200 && answer.path("input_tokens").canConvertToInt()) {
      return answer.get("input_tokens").asInt();
    }
    String message = answer.at("/error/message").isTextual() ? answer.at("/error/message").asText()
        : answer.path("message").isTextual() ? answer.get("message").asText()
        : "context worker rejected the request with status " + a.status();
    throw ProtocolException.of(a.status() >= 400 && a.status() <= 599 ? a.status() : 502, message, null);
  }

  /**
   * The ids of worker {@code id}'s answer to {@code POST /_internal/tokenize} ({@code {"tokens": [...]}}).
   *
   * @throws IllegalStateException when it answered another status or no tokens
   */
  static int[] tokens(String id, ProtocolCodec codec, ControlExchange.Answer a) {
    JsonNode tokens = a.status() == 200 ? codec.readTree(a.body()).get("tokens") : null;
    if (tokens == null || !tokens.isArray()) {
      throw new IllegalStateException("worker " + id + " answered /_internal/tokenize with status " + a.status()
          + (a.status() == 200 ? " and no tokens" : ""));
    }
    int[] ids = new int[tokens.size()];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = tokens.get(i).asInt();
    }
    return ids;
  }
}
