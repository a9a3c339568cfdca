package dev.affinity.server.worker;

import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http.HttpResponse;

/**
 * One request/answer on a pooled worker connection, as the connection's {@link ExchangeHandler} sees
 * it: the answer's head, its body in pieces, then either its end or a failure. All calls run on the
 * connection's event loop, in that order, and after {@link #onEnd} or {@link #onFailure} nothing more
 * comes. The body pieces are released by the handler after the call: keep nothing of them.
 */
abstract class Exchange {
  /** The status line and headers (interim 1xx answers are skipped). */
  abstract void onHead(HttpResponse head);

  /** A piece of the body. */
  abstract void onContent(ByteBuf content);

  /**
   * The answer is complete. Returns whether the connection may serve another exchange (the handler also
   * requires the worker to keep it alive): false when this exchange gave up on it midway.
   */
  abstract boolean onEnd();

  /** The connection broke (or the request could not be written) before the answer was complete. */
  abstract void onFailure(Throwable cause);
}
