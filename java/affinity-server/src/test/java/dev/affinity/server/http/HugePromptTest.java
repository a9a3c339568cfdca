package dev.affinity.server.http;

import static dev.affinity.server.http.Fixtures.ROUTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.admission.CodecPromptTokenizer;
import dev.affinity.admission.PromptLimit;
import dev.affinity.admission.PromptTokenizer;
import dev.affinity.nativebridge.worker.BpeTokenCodec;
import dev.affinity.protocol.CompletionRequest;
import dev.affinity.protocol.OpenAiRequest;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Huge prompts never hold the event loop: with one event loop for every connection, a small request is answered
 * while two 10 MB whitespace-free prompts are refused, by the characters-per-token bound before any tokenizing (the
 * refusal says "at least"), and, for a tokenizer without such a bound, while a huge prompt is still being
 * tokenized (it is tokenized on the tokenizing threads; were it on the loop, the small request could not be
 * answered until it was released, and this test would time out).
 */
class HugePromptTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static final String HUGE = "x".repeat(10 * 1024 * 1024);
  static final PromptLimit LIMIT = new PromptLimit(32_768, "affinity.max_prompt_tokens");

  final TestBackend backend = new TestBackend();
  final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  FrontendServer server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  void start() throws Exception {
    backend.promptLimit = LIMIT;
    backend.handler = (request, headers, sink) -> sink.respondEncoded(dev.affinity.worker.EncodedResponse.of(Fixtures.completionResponse("ok")), ROUTE);
    server = FrontendServer.start(FrontendOptions.defaults().withModels(List.of("test-model"))
        .withAccessLog(AccessLog.none()).withIoThreads(1), backend, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
  }

  CompletableFuture<HttpResponse<String>> complete(String prompt) {
    String body = JSON.createObjectNode().put("model", "test-model").put("prompt", prompt).put("max_tokens", 2)
        .toString();
    return http.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/v1/completions"))
        .timeout(Duration.ofSeconds(120)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
  }

  static void assertRefused(HttpResponse<String> r, String says) throws Exception {
    assertEquals(400, r.statusCode(), r.body());
    JsonNode error = JSON.readTree(r.body()).path("error");
    assertEquals("prompt", error.path("param").asText(), r.body());
    assertTrue(error.path("message").asText().contains(says), r.body());
  }

  @Test
  void aSmallRequestIsAnsweredWhileTwoHugePromptsAreRefusedByTheirSize() throws Exception {
    BpeTokenCodec codec = new BpeTokenCodec("cl100k_base");
    backend.tokenizer = new CodecPromptTokenizer(
        r -> codec.encode(((CompletionRequest) r).promptText().orElse("")), codec);
    start();
    CompletableFuture<HttpResponse<String>> first = complete(HUGE);
    CompletableFuture<HttpResponse<String>> second = complete(HUGE);
    HttpResponse<String> small = complete("hello there").get(60, TimeUnit.SECONDS);
    assertEquals(200, small.statusCode(), small.body());
    assertRefused(first.get(60, TimeUnit.SECONDS), "at least");
    assertRefused(second.get(60, TimeUnit.SECONDS), "at least");
    assertEquals(1, backend.calls.get(), "only the small request reached the handler");
  }

  @Test
  void aHugePromptWithoutABoundIsTokenizedOffTheLoop() throws Exception {
    CountDownLatch tokenizing = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    backend.tokenizer = new PromptTokenizer() {
      @Override
      public int[] tokenize(OpenAiRequest request) {
        String text = ((CompletionRequest) request).promptText().orElse("");
        if (text.length() > 1000) {
          tokenizing.countDown();
          try {
            release.await(60, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
        return text.codePoints().toArray();
      }

      @Override
      public boolean isLong(OpenAiRequest request) {
        return PromptTokenizer.longText(request);
      }
    };
    start();
    CompletableFuture<HttpResponse<String>> huge = complete(HUGE);
    assertTrue(tokenizing.await(60, TimeUnit.SECONDS), "the huge prompt reached the tokenizer");
    HttpResponse<String> small = complete("hello there").get(60, TimeUnit.SECONDS);
    assertEquals(200, small.statusCode(), small.body());
    assertFalse(huge.isDone(), "the huge prompt is still being tokenized");
    release.countDown();
    assertRefused(huge.get(60, TimeUnit.SECONDS), "the prompt has " + HUGE.length() + " tokens");
  }
}
