package dev.affinity.server.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.admission.PromptTokenizer;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.ProtocolException;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The frontend's input checks over the wire, each a 400 naming its field in its API's envelope: the {@code Host}
 * header (RFC 9112 §3.2), an escaped lone surrogate in text, and a chat template's refusal on {@code /v1/responses},
 * named by the Responses path ({@code input}) rather than the chat's ({@code messages}).
 */
class InputChecksTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int SAFETY_MS = 10_000;

  private final TestBackend backend = new TestBackend();
  private FrontendServer server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  private void start() throws IOException {
    backend.handler = (request, headers, sink) -> sink.respondEncoded(dev.affinity.worker.EncodedResponse.of(Fixtures.chatResponse("ok")), Fixtures.ROUTE);
    server = FrontendServer.start(FrontendOptions.defaults().withModels(List.of("test-model"))
        .withAccessLog(AccessLog.none()).withIoThreads(1), backend, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
  }

  /** Sends raw bytes and reads the answer until the server closes (every request here asks it to). */
  private String exchange(String request) throws IOException {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", server.port()), SAFETY_MS);
      s.setSoTimeout(SAFETY_MS);
      s.getOutputStream().write(request.getBytes(StandardCharsets.UTF_8));
      s.getOutputStream().flush();
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      InputStream in = s.getInputStream();
      byte[] buf = new byte[8192];
      for (int n; (n = in.read(buf)) > 0; ) {
        out.write(buf, 0, n);
      }
      return out.toString(StandardCharsets.UTF_8);
    }
  }

  private static String post(String path, String headers, String body) {
    return "POST " + path + " HTTP/1.1\r\n" + headers + "Content-Type: application/json\r\nConnection: close\r\n"
        + "Content-Length: " + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body;
  }

  private static JsonNode body(String response) throws IOException {
    return JSON.readTree(response.substring(response.indexOf("\r\n\r\n") + 4));
  }

  private static final String CHAT = "{\"model\":\"test-model\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

  @Test
  void anHttp11RequestWithoutHostIsRefusedNamingIt() throws Exception {
    start();
    String r = exchange(post("/v1/chat/completions", "", CHAT));
    assertTrue(r.startsWith("HTTP/1.1 400 "), r);
    assertEquals("host", body(r).path("error").path("param").asText(), r);
    assertEquals(0, backend.calls.get());
  }

  @Test
  void twoHostHeadersAreRefusedOnEveryVersion() throws Exception {
    start();
    String r = exchange(post("/v1/chat/completions", "Host: a\r\nHost: b\r\n", CHAT));
    assertTrue(r.startsWith("HTTP/1.1 400 "), r);
    assertEquals("host", body(r).path("error").path("param").asText(), r);
    String old = exchange("GET /version HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n");
    assertTrue(old.startsWith("HTTP/1.0 400 "), old);
  }

  @Test
  void http10MayLeaveHostOutAndOneHostPasses() throws Exception {
    start();
    String old = exchange("GET /version HTTP/1.0\r\n\r\n");
    assertTrue(old.startsWith("HTTP/1.0 200 "), old);
    String r = exchange(post("/v1/chat/completions", "Host: test\r\n", CHAT));
    assertTrue(r.startsWith("HTTP/1.1 200 "), r);
  }

  @Test
  void messagesAnswerAMissingHostInAnthropicsEnvelope() throws Exception {
    start();
    String r = exchange(post("/v1/messages", "", "{}"));
    assertTrue(r.startsWith("HTTP/1.1 400 "), r);
    JsonNode error = body(r);
    assertEquals("error", error.path("type").asText(), r);
    assertTrue(error.path("error").path("message").asText().startsWith("host: "), r);
  }

  @Test
  void aLoneSurrogateIsRefusedNamingItsFieldInEachEnvelope() throws Exception {
    start();
    String chat = exchange(post("/v1/chat/completions", "Host: t\r\n",
        "{\"model\":\"test-model\",\"messages\":[{\"role\":\"user\",\"content\":\"a\\ud800\"}]}"));
    assertTrue(chat.startsWith("HTTP/1.1 400 "), chat);
    assertEquals("messages[0].content", body(chat).path("error").path("param").asText(), chat);
    String messages = exchange(post("/v1/messages", "Host: t\r\n",
        "{\"model\":\"test-model\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"\\udc00\"}]}"));
    assertTrue(messages.startsWith("HTTP/1.1 400 "), messages);
    assertTrue(body(messages).path("error").path("message").asText().startsWith("messages[0].content: "), messages);
    assertEquals(0, backend.calls.get());
  }

  /** A tokenizer whose chat template refuses every conversation, as a template's {@code raise_exception} does. */
  private static PromptTokenizer refusingTemplate(boolean longPrompt) {
    return new PromptTokenizer() {
      @Override
      public int[] tokenize(OpenAiRequest request) {
        throw ProtocolException.invalidField("messages", "Conversation roles must alternate user/assistant");
      }

      @Override
      public boolean isLong(OpenAiRequest request) {
        return longPrompt;
      }
    };
  }

  @Test
  void responsesNameATemplatesRefusalByTheirInput() throws Exception {
    for (boolean offLoop : new boolean[] {false, true}) {
      backend.tokenizer = refusingTemplate(offLoop);
      start();
      String r = exchange(post("/v1/responses", "Host: t\r\n", "{\"model\":\"test-model\",\"input\":\"hi\"}"));
      assertTrue(r.startsWith("HTTP/1.1 400 "), r);
      JsonNode error = body(r).path("error");
      assertEquals("input", error.path("param").asText(), "tokenized off the loop: " + offLoop + ": " + r);
      assertTrue(error.path("message").asText().startsWith("input: Conversation roles"), r);
      String chat = exchange(post("/v1/chat/completions", "Host: t\r\n", CHAT));
      assertEquals("messages", body(chat).path("error").path("param").asText(), chat);
      server.close();
      server = null;
    }
  }
}
