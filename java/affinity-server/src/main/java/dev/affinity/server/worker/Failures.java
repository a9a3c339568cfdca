package dev.affinity.server.worker;

import com.fasterxml.jackson.databind.JsonNode;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.worker.WorkerFailure;
import java.io.IOException;
import io.netty.channel.ConnectTimeoutException;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.PrematureChannelClosureException;
import java.net.ConnectException;
import java.net.UnknownHostException;
import java.nio.channels.UnresolvedAddressException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;

/** Maps transport errors and error answers of a worker to {@link WorkerFailure}s. */
final class Failures {
  /** Longest error text taken from a worker's body (upstream keeps 2048 characters). */
  static final int MAX_MESSAGE = 2048;

  private Failures() {}

  /** A transport-level failure ({@code afterFirstByte} is decided by the call). */
  static WorkerFailure of(Throwable t) {
    Throwable e = unwrap(t);
    WorkerFailure.Kind kind;
    if (e instanceof ConnectTimeoutException || e instanceof ConnectException || e instanceof UnknownHostException
        || e instanceof UnresolvedAddressException || e.getCause() instanceof UnresolvedAddressException) {
      kind = WorkerFailure.Kind.CONNECT;
    } else if (e instanceof TimeoutException) {
      kind = WorkerFailure.Kind.TIMEOUT;
    } else if (e instanceof CancellationException) {
      kind = WorkerFailure.Kind.CANCELLED;
    } else if (e instanceof ProtocolException || e instanceof DecoderException) {
      kind = WorkerFailure.Kind.PROTOCOL;
    } else if (e instanceof IOException || e instanceof PrematureChannelClosureException) {
      kind = WorkerFailure.Kind.RESET; // reset, EOF before or inside the answer, closed channel
    } else {
      kind = WorkerFailure.Kind.PROTOCOL;
    }
    return new WorkerFailure(kind, 0, describe(e), false);
  }

  /** A non-2xx answer: 4xx → CLIENT_ERROR, 5xx → SERVER_ERROR, anything else → PROTOCOL. */
  static WorkerFailure ofStatus(int status, byte[] body, ProtocolCodec codec) {
    WorkerFailure.Kind kind = status >= 400 && status < 500 ? WorkerFailure.Kind.CLIENT_ERROR
        : status >= 500 && status < 600 ? WorkerFailure.Kind.SERVER_ERROR : WorkerFailure.Kind.PROTOCOL;
    return new WorkerFailure(kind, status, errorMessage(status, body, codec), false);
  }

  /**
   * The error text of a worker's body: trtllm-serve's {@code {"object":"error","message":...}}, OpenAI's
   * {@code {"error":{"message":...}}}, a validation {@code {"error":"..."}}, FastAPI's {@code {"detail":...}};
   * else the body text (truncated); else {@code "HTTP <status>"}.
   */
  static String errorMessage(int status, byte[] body, ProtocolCodec codec) {
    if (body == null || body.length == 0) {
      return "HTTP " + status;
    }
    try {
      JsonNode root = codec.readTree(body);
      String fromJson = firstText(root.path("message"), root.path("error").path("message"), root.path("error"),
          root.path("detail"));
      if (fromJson != null) {
        return truncate(fromJson);
      }
    } catch (ProtocolException notJson) {
      // plain text
    }
    String text = new String(body, StandardCharsets.UTF_8).strip();
    return text.isEmpty() ? "HTTP " + status : truncate(text);
  }

  private static String firstText(JsonNode... nodes) {
    for (JsonNode n : nodes) {
      if (n.isTextual() && !n.textValue().isBlank()) {
        return n.textValue();
      }
      if (n.isArray() || (n.isObject() && !n.isEmpty() && n.get("message") == null)) {
        return n.toString(); // e.g. FastAPI's list of validation errors
      }
    }
    return null;
  }

  private static String truncate(String s) {
    return s.length() <= MAX_MESSAGE ? s : s.substring(0, MAX_MESSAGE) + "...";
  }

  static Throwable unwrap(Throwable t) {
    Throwable e = t;
    while ((e instanceof CompletionException || e instanceof ExecutionException) && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }

  private static String describe(Throwable e) {
    String m = e.getMessage();
    return e.getClass().getSimpleName() + (m == null || m.isEmpty() ? "" : ": " + m);
  }
}
