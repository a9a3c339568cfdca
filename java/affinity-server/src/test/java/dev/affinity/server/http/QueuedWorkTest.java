package dev.affinity.server.http;

import static dev.affinity.server.http.Fixtures.ROUTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.admission.QueueLimit;
import dev.affinity.frontend.ClientSink;
import dev.affinity.protocol.CompletionRequest;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The bound on work in flight ({@link QueueLimit}): past its requests or its prompt tokens a request is answered 503
 * with {@code Retry-After} and a JSON error saying which bound, without reaching the handler; what is held is
 * released when each exchange completes, and a request alone is always taken.
 */
class QueuedWorkTest {
  static final ObjectMapper JSON = new ObjectMapper();
  final TestBackend backend = new TestBackend();
  final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  final List<ClientSink> held = new CopyOnWriteArrayList<>();
  FrontendServer server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  void start(QueueLimit limit) throws Exception {
    backend.queueLimit = limit;
    backend.tokenizer = r -> ((CompletionRequest) r).promptText().orElse("").codePoints().toArray();
    backend.handler = (request, headers, sink) -> {
      if (((CompletionRequest) request).promptText().orElse("").startsWith("hold")) {
        held.add(sink);
      } else {
        sink.respondEncoded(dev.affinity.worker.EncodedResponse.of(Fixtures.completionResponse("ok")), ROUTE);
      }
    };
    server = FrontendServer.start(FrontendOptions.defaults().withModels(List.of("test-model"))
        .withAccessLog(AccessLog.none()), backend, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
  }

  CompletableFuture<HttpResponse<String>> complete(String prompt) {
    String body = JSON.createObjectNode().put("model", "test-model").put("prompt", prompt).put("max_tokens", 2)
        .toString();
    return http.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/v1/completions"))
        .timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
  }

  void awaitHeld(int n) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (held.size() < n) {
      assertTrue(System.nanoTime() < deadline, "requests did not reach the handler");
      Thread.sleep(5);
    }
  }

  static void assertFull(HttpResponse<String> r, String says) throws Exception {
    assertEquals(503, r.statusCode(), r.body());
    assertEquals("1", r.headers().firstValue("retry-after").orElse(null));
    String message = JSON.readTree(r.body()).at("/error/message").asText();
    assertTrue(message.contains(says), message);
  }

  @Test
  void pastTheRequestBoundA503WithRetryAfterUntilOneCompletes() throws Exception {
    start(new QueueLimit(2, 0, "none"));
    CompletableFuture<HttpResponse<String>> a = complete("hold a");
    CompletableFuture<HttpResponse<String>> b = complete("hold b");
    awaitHeld(2);
    assertFull(complete("third").get(30, TimeUnit.SECONDS), "affinity.max_queued_requests allows (2)");
    assertEquals(2, backend.calls.get(), "the refused request never reached the handler");
    held.get(0).respondEncoded(dev.affinity.worker.EncodedResponse.of(Fixtures.completionResponse("done")), ROUTE);  // a's or b's, whichever arrived first
    assertEquals(200, ((HttpResponse<?>) CompletableFuture.anyOf(a, b).get(30, TimeUnit.SECONDS)).statusCode());
    assertEquals(200, complete("third again").get(30, TimeUnit.SECONDS).statusCode(), "released on completion");
    held.get(1).respondEncoded(dev.affinity.worker.EncodedResponse.of(Fixtures.completionResponse("done")), ROUTE);
    assertEquals(200, a.get(30, TimeUnit.SECONDS).statusCode());
    assertEquals(200, b.get(30, TimeUnit.SECONDS).statusCode());
  }

  @Test
  void pastTheTokenBoundA503NamingItsSourceAndOnePromptAloneIsAlwaysTaken() throws Exception {
    start(new QueueLimit(100, 100, "affinity.max_queued_tokens"));
    // counted before tokenizing, at four characters a token
    CompletableFuture<HttpResponse<String>> big = complete("hold " + "x".repeat(315));  // 320 chars: 80 tokens
    awaitHeld(1);
    assertFull(complete("y".repeat(120)).get(30, TimeUnit.SECONDS),
        "this request's 30 would pass the 100 allowed (affinity.max_queued_tokens)");
    assertEquals(200, complete("z".repeat(40)).get(30, TimeUnit.SECONDS).statusCode(), "fits beside the held one");
    held.get(0).respondEncoded(dev.affinity.worker.EncodedResponse.of(Fixtures.completionResponse("done")), ROUTE);
    assertEquals(200, big.get(30, TimeUnit.SECONDS).statusCode());
    assertEquals(200, complete("w".repeat(2000)).get(30, TimeUnit.SECONDS).statusCode(), "alone, a prompt over the bound");
  }

  @Test
  void theCountersReleaseWhatTheyTook() {
    QueuedWork q = new QueuedWork(new QueueLimit(1, 10, "t"));
    assertNull(q.tryAcquire(50));
    assertTrue(q.tryAcquire(1).contains("max_queued_requests"));
    q.release(50);
    assertEquals(0, q.requests());
    assertEquals(0, q.tokens());
  }
}
