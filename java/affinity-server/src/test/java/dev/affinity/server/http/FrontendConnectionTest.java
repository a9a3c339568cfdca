package dev.affinity.server.http;

import static dev.affinity.server.http.Fixtures.COMPLETION;
import static dev.affinity.server.http.Fixtures.ROUTE;
import static dev.affinity.server.http.Fixtures.STREAMING_COMPLETION;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.frontend.ClientSink;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Connection-level behaviour over raw sockets: timeouts for slow clients, client disconnects, aborts,
 * pipelining, keep-alive, HTTP/1.0 and {@code Expect: 100-continue}. Waits are bounded by latches and
 * socket timeouts as safety nets; no assertion depends on timing.
 */
class FrontendConnectionTest {
  private static final int SAFETY_MS = 10_000;

  private final TestBackend backend = new TestBackend();
  private final RecordingAccessLog accessLog = new RecordingAccessLog();
  private FrontendServer server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  private FrontendServer start(FrontendOptions options) throws IOException {
    server = FrontendServer.start(options, backend, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
    return server;
  }

  private FrontendOptions options() {
    return FrontendOptions.defaults().withModels(List.of("test-model")).withAccessLog(accessLog).withIoThreads(1);
  }

  private Socket connect() throws IOException {
    Socket s = new Socket();
    s.connect(new InetSocketAddress("127.0.0.1", server.port()), SAFETY_MS);
    s.setSoTimeout(SAFETY_MS);
    return s;
  }

  private static void send(Socket s, String text) throws IOException {
    s.getOutputStream().write(text.getBytes(StandardCharsets.UTF_8));
    s.getOutputStream().flush();
  }

  private static String post(String path, String body, String... extraHeaderLines) {
    StringBuilder sb = new StringBuilder("POST ").append(path).append(" HTTP/1.1\r\nHost: test\r\n")
        .append("Content-Type: application/json\r\nContent-Length: ")
        .append(body.getBytes(StandardCharsets.UTF_8).length).append("\r\n");
    for (String h : extraHeaderLines) {
      sb.append(h).append("\r\n");
    }
    return sb.append("\r\n").append(body).toString();
  }

  /** Everything the server sends until it closes its side. */
  private static String readToEnd(Socket s) throws IOException {
    return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
  }

  /** Reads until {@code marker} has arrived; returns what was read. */
  private static String readUntil(Socket s, String marker) throws IOException {
    InputStream in = s.getInputStream();
    ByteArrayOutputStream seen = new ByteArrayOutputStream();
    byte[] buf = new byte[4096];
    while (!seen.toString(StandardCharsets.UTF_8).contains(marker)) {
      int n = in.read(buf);
      if (n < 0) {
        throw new AssertionError("connection closed before " + marker + "; got: " + seen);
      }
      seen.write(buf, 0, n);
    }
    return seen.toString(StandardCharsets.UTF_8);
  }

  private static void await(CountDownLatch latch, String what) throws InterruptedException {
    assertTrue(latch.await(SAFETY_MS, TimeUnit.MILLISECONDS), what);
  }

  // ---- slow and stalled clients ----

  @Test
  void stalledBodyGets408AndTheConnectionIsClosed() throws Exception {
    start(options().withRequestReadTimeout(Duration.ofMillis(200)));
    try (Socket s = connect()) {
      send(s, "POST /v1/completions HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
          + "Content-Length: 100\r\n\r\n{\"model\":\"test-");
      String response = readToEnd(s);
      assertTrue(response.startsWith("HTTP/1.1 408 Request Timeout\r\n"), response);
      assertTrue(response.contains("\"type\":\"timeout_error\""), response);
      assertTrue(response.contains("request not received within 200 ms"), response);
      assertTrue(response.toLowerCase().contains("connection: close"), response);
    }
    assertEquals(0, backend.calls.get());
    assertEquals(408, accessLog.last().status());
    assertEquals("/v1/completions", accessLog.last().path());
  }

  @Test
  void stalledHeadersGet408() throws Exception {
    start(options().withRequestReadTimeout(Duration.ofMillis(200)));
    try (Socket s = connect()) {
      send(s, "GET /health HTTP/1.1\r\nHost: te");
      String response = readToEnd(s);
      assertTrue(response.startsWith("HTTP/1.1 408 "), response);
    }
  }

  @Test
  void tricklingClientGets408() throws Exception {
    start(options().withRequestReadTimeout(Duration.ofMillis(300)));
    try (Socket s = connect()) {
      send(s, "POST /v1/completions HTTP/1.1\r\nHost: test\r\nContent-Length: 1000\r\n\r\n");
      s.setSoTimeout(20);
      InputStream in = s.getInputStream();
      String response = null;
      // one byte at a time, never idle long, never done: the whole-request deadline still fires
      for (int i = 0; i < 900 && response == null; i++) {
        send(s, "a");
        try {
          int b = in.read();
          s.setSoTimeout(SAFETY_MS);
          response = b < 0 ? "" : (char) b + new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (java.net.SocketTimeoutException e) {
          // nothing yet
        } catch (java.net.SocketException e) {
          break;
        }
      }
      assertTrue(response != null && response.startsWith("HTTP/1.1 408 "), String.valueOf(response));
    }
  }

  @Test
  void idleKeepAliveConnectionIsClosedQuietly() throws Exception {
    start(options().withKeepAliveTimeout(Duration.ofMillis(100)));
    try (Socket s = connect()) {
      send(s, "GET /health HTTP/1.1\r\nHost: test\r\n\r\n");
      String response = readToEnd(s);
      assertTrue(response.startsWith("HTTP/1.1 200 OK\r\n"), response);
      assertFalse(response.contains("408"), "an idle connection is closed without a response");
    }
  }

  // ---- client disconnects ----

  @Test
  void disconnectMidStreamRunsTheCallbackExactlyOnce() throws Exception {
    start(options());
    AtomicInteger callbacks = new AtomicInteger();
    CountDownLatch disconnected = new CountDownLatch(1);
    AtomicReference<ClientSink> sinkRef = new AtomicReference<>();
    backend.handler = (request, headers, sink) -> {
      sinkRef.set(sink);
      sink.onDisconnect(() -> {
        callbacks.incrementAndGet();
        disconnected.countDown();
      });
      sink.streamStart(ROUTE);
      sink.streamEncoded(dev.affinity.worker.EncodedChunk.of(Fixtures.chunk(0)));
    };
    try (Socket s = connect()) {
      send(s, post("/v1/completions", STREAMING_COMPLETION));
      String seen = readUntil(s, "data: {");
      assertTrue(seen.startsWith("HTTP/1.1 200 OK"), seen);
    }
    await(disconnected, "onDisconnect ran");
    // the orchestration may still be answering: ignored, and no second callback
    ClientSink sink = sinkRef.get();
    sink.streamEncoded(dev.affinity.worker.EncodedChunk.of(Fixtures.chunk(1)));
    sink.streamEnd(ROUTE);
    sink.onDisconnect(callbacks::incrementAndGet); // registered after the disconnect: runs once, now
    server.close(); // drains the event loops: every queued sink call has run
    assertEquals(2, callbacks.get());
    List<AccessRecord> records = accessLog.forPath("/v1/completions");
    assertEquals(1, records.size(), records.toString());
    assertEquals(AccessRecord.CLIENT_DISCONNECT, records.get(0).outcome());
    assertEquals(200, records.get(0).status());
  }

  @Test
  void disconnectWhileWaitingRunsTheCallback() throws Exception {
    start(options());
    CountDownLatch handled = new CountDownLatch(1);
    CountDownLatch disconnected = new CountDownLatch(1);
    AtomicInteger callbacks = new AtomicInteger();
    backend.handler = (request, headers, sink) -> {
      sink.onDisconnect(() -> {
        callbacks.incrementAndGet();
        disconnected.countDown();
      });
      handled.countDown();
    };
    // a client that asked for 100 Continue is probed with it while it waits: its closed socket answers the probe
    // with a reset (a client that did not ask gets no probe, and is found when its answer is written)
    try (Socket s = connect()) {
      send(s, post("/v1/completions", COMPLETION, "Expect: 100-continue"));
      await(handled, "the handler was called");
    }
    await(disconnected, "onDisconnect ran");
    server.close();
    assertEquals(1, callbacks.get());
    assertEquals(499, accessLog.last().status());
    assertEquals(AccessRecord.CLIENT_DISCONNECT, accessLog.last().outcome());
  }

  @Test
  void callbackDoesNotRunAfterACompleteAnswer() throws Exception {
    start(options());
    AtomicInteger callbacks = new AtomicInteger();
    backend.handler = (request, headers, sink) -> {
      sink.onDisconnect(callbacks::incrementAndGet);
      sink.respondEncoded(dev.affinity.worker.EncodedResponse.of(Fixtures.completionResponse("x")), ROUTE);
    };
    try (Socket s = connect()) {
      send(s, post("/v1/completions", COMPLETION, "Connection: close"));
      String response = readToEnd(s);
      assertTrue(response.startsWith("HTTP/1.1 200 OK"), response);
    }
    server.close();
    assertEquals(0, callbacks.get());
  }

  @Test
  void abortMidStreamClosesWithoutDone() throws Exception {
    start(options());
    backend.handler = (request, headers, sink) -> {
      sink.streamStart(ROUTE);
      sink.streamEncoded(dev.affinity.worker.EncodedChunk.of(Fixtures.chunk(0)));
      sink.abort("generation worker gen-1 failed", ROUTE);
    };
    try (Socket s = connect()) {
      send(s, post("/v1/completions", STREAMING_COMPLETION));
      String response = readToEnd(s);
      assertTrue(response.startsWith("HTTP/1.1 200 OK"), response);
      assertTrue(response.toLowerCase().contains("transfer-encoding: chunked"), response);
      assertTrue(response.contains("data: {"), response);
      assertFalse(response.contains("[DONE]"), response);
      assertFalse(response.endsWith("0\r\n\r\n"), "no terminating chunk: the client sees a broken stream");
    }
    AccessRecord a = accessLog.last();
    assertEquals(AccessRecord.ABORTED, a.outcome());
    assertEquals("generation worker gen-1 failed", a.error());
  }

  @Test
  void failAfterStreamStartEndsTheStreamWithAnErrorEvent() throws Exception {
    start(options());
    backend.handler = (request, headers, sink) -> {
      sink.streamStart(ROUTE);
      sink.fail(502, dev.affinity.protocol.ErrorResponse.of(502, "late failure", null), ROUTE);
    };
    try (Socket s = connect()) {
      send(s, post("/v1/completions", STREAMING_COMPLETION, "Connection: close"));
      String response = readToEnd(s);
      assertTrue(response.startsWith("HTTP/1.1 200 OK"), response);
      assertFalse(response.contains("[DONE]"), response);
      assertTrue(response.contains("data: {\"error\":{\"message\":\"late failure\""), response);
      assertTrue(response.endsWith("\r\n0\r\n\r\n"), "the chunked body ends properly: " + response);
    }
    assertEquals(AccessRecord.ABORTED, accessLog.last().outcome());
    assertEquals("late failure", accessLog.last().error());
  }

  // ---- the heap budget of prompts in flight ----

  @Test
  void promptsBeyondTheHeapBudgetAre503WithRetryAfterUntilOneCompletes() throws Exception {
    String big = "{\"model\": \"test-model\", \"prompt\": \"" + "x".repeat(1000) + "\"}";
    // each request is charged 4x its body (about 4 KiB): a 6 KiB budget holds one at a time
    System.setProperty(PromptBudget.PROPERTY, "6000");
    try {
      start(options());
    } finally {
      System.clearProperty(PromptBudget.PROPERTY);
    }
    LinkedBlockingQueue<ClientSink> held = new LinkedBlockingQueue<>();
    backend.handler = (request, headers, sink) -> held.add(sink);
    try (Socket first = connect(); Socket second = connect()) {
      send(first, post("/v1/completions", big));
      ClientSink sink = held.poll(SAFETY_MS, TimeUnit.MILLISECONDS);
      assertTrue(sink != null, "the first request reached the handler");
      send(second, post("/v1/completions", big, "Connection: close"));
      String refused = readToEnd(second);
      assertTrue(refused.startsWith("HTTP/1.1 503"), refused);
      assertTrue(refused.toLowerCase(java.util.Locale.ROOT).contains("retry-after: 1"), refused);
      assertTrue(refused.contains("heap budget"), refused);
      sink.fail(500, dev.affinity.protocol.ErrorResponse.of(500, "done", null), ROUTE);  // the first one completes
    }
    try (Socket third = connect()) {
      send(third, post("/v1/completions", big, "Connection: close"));
      assertTrue(held.poll(SAFETY_MS, TimeUnit.MILLISECONDS) != null, "the budget was released: admitted again");
    }
  }

  // ---- half-closed clients ----

  @Test
  void halfClosedClientStillGetsTheAnswer() throws Exception {
    start(options());
    CountDownLatch handled = new CountDownLatch(1);
    AtomicInteger callbacks = new AtomicInteger();
    AtomicReference<ClientSink> sinkRef = new AtomicReference<>();
    backend.handler = (request, headers, sink) -> {
      sink.onDisconnect(callbacks::incrementAndGet);
      sinkRef.set(sink);
      handled.countDown();
    };
    try (Socket s = connect()) {
      send(s, post("/v1/completions", COMPLETION));
      s.shutdownOutput();
      await(handled, "the handler was called");
      // give the half-close probe its chance to run (it would have written within PROBE_FIRST_MILLIS); the request
      // did not ask for 100 Continue, so none comes before the answer
      Thread.sleep(3 * HttpConnection.PROBE_FIRST_MILLIS);
      sinkRef.get().respondEncoded(dev.affinity.worker.EncodedResponse.of(Fixtures.completionResponse("late")), ROUTE);
      String response = readToEnd(s);
      assertTrue(response.startsWith("HTTP/1.1 200 OK\r\n"), "no unsolicited 100 Continue: " + response);
      assertTrue(response.contains("\"text\":\"late\""), response);
    }
    server.close();
    assertEquals(0, callbacks.get(), "a half-closed client has not gone away");
    assertEquals(AccessRecord.OK, accessLog.last().outcome());
  }

  @Test
  void halfClosedClientStillGetsTheWholeStream() throws Exception {
    start(options());
    CountDownLatch handled = new CountDownLatch(1);
    AtomicReference<ClientSink> sinkRef = new AtomicReference<>();
    backend.handler = (request, headers, sink) -> {
      sinkRef.set(sink);
      sink.streamStart(ROUTE);
      sink.streamEncoded(dev.affinity.worker.EncodedChunk.of(Fixtures.chunk(0)));
      handled.countDown();
    };
    try (Socket s = connect()) {
      send(s, post("/v1/completions", STREAMING_COMPLETION));
      s.shutdownOutput();
      await(handled, "the handler was called");
      String seen = readUntil(s, "data: {");
      ClientSink sink = sinkRef.get();
      sink.streamEncoded(dev.affinity.worker.EncodedChunk.of(Fixtures.chunk(1)));
      sink.streamEnd(ROUTE);
      String response = seen + readToEnd(s);
      assertTrue(response.startsWith("HTTP/1.1 200 OK\r\n"), response);
      assertTrue(response.contains("\"text\":\"t1\""), response);
      assertTrue(response.contains("data: [DONE]\n\n"), response);
      assertTrue(response.endsWith("0\r\n\r\n"), "the stream ends cleanly: " + response);
    }
    server.close();
    assertEquals(AccessRecord.OK, accessLog.last().outcome());
  }

  @Test
  void halfClosedIdleConnectionIsClosed() throws Exception {
    start(options());
    try (Socket s = connect()) {
      send(s, "GET /health HTTP/1.1\r\nHost: test\r\n\r\n");
      s.shutdownOutput();
      String response = readToEnd(s);
      assertTrue(response.startsWith("HTTP/1.1 200 OK\r\n"), response);
    }
  }

  // ---- HTTP/1.1 details ----

  /** Completion requests are answered with {@code text} from another thread once {@code release} opens. */
  private void answerWhenReleased(CountDownLatch release, String text) {
    backend.handler = (request, headers, sink) -> new Thread(() -> {
      try {
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      sink.respondEncoded(dev.affinity.worker.EncodedResponse.of(Fixtures.completionResponse(text)), ROUTE);
    }).start();
  }

  @Test
  void pipelinedRequestsAreAnsweredInOrder() throws Exception {
    start(options().withVersion("v-pipe"));
    CountDownLatch release = new CountDownLatch(1);
    answerWhenReleased(release, "first");
    try (Socket s = connect()) {
      send(s, post("/v1/completions", COMPLETION) + "GET /version HTTP/1.1\r\nHost: test\r\n\r\n"
          + "GET /health HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
      release.countDown();
      String all = readToEnd(s);
      int first = all.indexOf("\"text\":\"first\"");
      int second = all.indexOf("{\"version\":\"v-pipe\"}");
      int third = all.lastIndexOf("HTTP/1.1 200 OK");
      assertTrue(first > 0 && second > first && third > second, all);
      assertEquals(3, all.split("HTTP/1.1 200 OK", -1).length - 1, all);
    }
  }

  @Test
  void pipelinedRejectionWaitsForTheRequestAhead() throws Exception {
    start(options());
    CountDownLatch release = new CountDownLatch(1);
    answerWhenReleased(release, "first");
    try (Socket s = connect()) {
      send(s, post("/v1/completions", COMPLETION) + "GET /nowhere HTTP/1.1\r\nHost: test\r\n\r\n"
          + "DELETE /health HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
      s.setSoTimeout(300);
      // while the first request waits, nothing is answered (a slow server only makes this check weaker)
      assertThrows(java.net.SocketTimeoutException.class, () -> s.getInputStream().read());
      s.setSoTimeout(SAFETY_MS);
      release.countDown();
      String all = readToEnd(s);
      int first = all.indexOf("\"text\":\"first\"");
      int second = all.indexOf("HTTP/1.1 404 ");
      int third = all.indexOf("HTTP/1.1 405 ");
      assertTrue(first > 0 && second > first && third > second, all);
    }
  }

  @Test
  void unsupportedExpectationIs417() throws Exception {
    start(options());
    try (Socket s = connect()) {
      send(s, "POST /v1/completions HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\nExpect: something-else\r\n\r\n");
      String response = readToEnd(s);
      assertTrue(response.startsWith("HTTP/1.1 417 "), response);
      assertTrue(response.contains("unsupported Expect header: something-else"), response);
    }
    assertEquals(0, backend.calls.get());
  }

  @Test
  void http10StreamEndsByClosing() throws Exception {
    start(options());
    backend.handler = (request, headers, sink) -> {
      sink.streamStart(ROUTE);
      sink.streamEncoded(dev.affinity.worker.EncodedChunk.of(Fixtures.chunk(0)));
      sink.streamEnd(ROUTE);
    };
    try (Socket s = connect()) {
      String request = post("/v1/completions", STREAMING_COMPLETION).replace("HTTP/1.1", "HTTP/1.0");
      send(s, request);
      String response = readToEnd(s);
      assertTrue(response.startsWith("HTTP/1.0 200 OK"), response);
      assertFalse(response.toLowerCase().contains("transfer-encoding"), response);
      assertTrue(response.endsWith("data: [DONE]\n\n"), response);
    }
  }

  @Test
  void expectContinueIsHonoured() throws Exception {
    start(options());
    backend.handler = (request, headers, sink) -> sink.respondEncoded(dev.affinity.worker.EncodedResponse.of(Fixtures.completionResponse("x")), ROUTE);
    try (Socket s = connect()) {
      String full = post("/v1/completions", COMPLETION, "Expect: 100-continue", "Connection: close");
      int split = full.indexOf("\r\n\r\n") + 4;
      send(s, full.substring(0, split));
      assertTrue(readUntil(s, "\r\n\r\n").startsWith("HTTP/1.1 100 Continue"));
      send(s, full.substring(split));
      assertTrue(readToEnd(s).startsWith("HTTP/1.1 200 OK"));
    }
  }

  @Test
  void expectContinueWithATooLargeBodyIs413BeforeTheBody() throws Exception {
    start(options().withMaxRequestBodyBytes(100));
    try (Socket s = connect()) {
      send(s, "POST /v1/completions HTTP/1.1\r\nHost: test\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n");
      String response = readToEnd(s);
      assertTrue(response.startsWith("HTTP/1.1 413 "), response);
      assertTrue(response.contains("request body is 5000 bytes; at most 100 bytes are allowed"), response);
    }
  }

  @Test
  void malformedRequestLineIs400() throws Exception {
    start(options());
    try (Socket s = connect()) {
      send(s, "GARBAGE\r\n\r\n");
      String response = readToEnd(s);
      assertTrue(response.startsWith("HTTP/1.1 400 "), response);
      assertTrue(response.contains("\"error\""), response);
    }
  }

  @Test
  void oversizedHeadersAre431() throws Exception {
    start(options());
    try (Socket s = connect()) {
      send(s, "GET /health HTTP/1.1\r\nHost: test\r\nX-Big: " + "b".repeat(40_000) + "\r\n\r\n");
      String response = readToEnd(s);
      assertTrue(response.startsWith("HTTP/1.1 431 "), response);
    }
  }

  @Test
  void headIsRefusedWithoutABody() throws Exception {
    start(options());
    try (Socket s = connect()) {
      send(s, "HEAD /health HTTP/1.1\r\nHost: test\r\n\r\nGET /health HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
      String response = readToEnd(s);
      assertTrue(response.startsWith("HTTP/1.1 405 "), response);
      assertTrue(response.toLowerCase().contains("allow: get"), response);
      int second = response.indexOf("HTTP/1.1 200 OK");
      assertTrue(second > 0, response);
      assertFalse(response.substring(0, second).contains("\"error\""), "a HEAD answer has no body: " + response);
    }
  }

  @Test
  void requestIdHeaderOnEveryResponse() throws Exception {
    start(options());
    try (Socket s = connect()) {
      send(s, "GET /nowhere HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
      String response = readToEnd(s);
      assertTrue(response.startsWith("HTTP/1.1 404 "), response);
      assertTrue(response.toLowerCase().contains("x-request-id: "), response);
    }
  }
}
