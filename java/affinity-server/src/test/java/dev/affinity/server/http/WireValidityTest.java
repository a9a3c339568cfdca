package dev.affinity.server.http;

import static dev.affinity.server.http.Fixtures.ROUTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/**
 * What arrives on the wire, byte for byte: another HTTP major version is 505 (in HTTP/1.1); bodies must be UTF-8 on
 * every completion endpoint alike (a UTF-8 byte order mark is ignored, UTF-16 and UTF-32 and invalid UTF-8 such as
 * overlong forms, CESU-8 surrogates and code points above U+10FFFF are 400); a session header that is not valid
 * UTF-8 is 400 naming the header.
 */
class WireValidityTest {
  final TestBackend backend = new TestBackend();
  FrontendServer server;

  @BeforeEach
  void start() throws Exception {
    backend.handler = (request, headers, sink) -> sink.respondEncoded(dev.affinity.worker.EncodedResponse.of(Fixtures.completionResponse("ok")), ROUTE);
    server = FrontendServer.start(FrontendOptions.defaults().withModels(List.of("test-model"))
        .withAccessLog(AccessLog.none()), backend, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
  }

  @AfterEach
  void stop() {
    server.close();
  }

  String exchange(byte[] request) throws IOException {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", server.port()), 10_000);
      s.setSoTimeout(30_000);
      s.getOutputStream().write(request);
      s.getOutputStream().flush();
      return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  static byte[] post(String path, String version, byte[] body, String... headers) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    StringBuilder head = new StringBuilder("POST " + path + " " + version + "\r\nHost: t\r\nConnection: close\r\n"
        + "Content-Type: application/json\r\nContent-Length: " + body.length + "\r\n");
    for (String h : headers) {
      head.append(h).append("\r\n");
    }
    out.writeBytes(head.append("\r\n").toString().getBytes(StandardCharsets.ISO_8859_1));
    out.writeBytes(body);
    return out.toByteArray();
  }

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static final String COMPLETION = "{\"model\": \"test-model\", \"prompt\": \"hi\", \"max_tokens\": 2}";
  static final String CHAT = "{\"model\": \"test-model\", \"max_tokens\": 2, \"messages\": [{\"role\": \"user\", "
      + "\"content\": \"hi\"}]}";

  @Test
  void anotherHttpMajorVersionIs505InHttp11() throws Exception {
    String r = exchange(post("/v1/completions", "HTTP/3.1", utf8(COMPLETION)));
    assertTrue(r.startsWith("HTTP/1.1 505 "), r);
    assertTrue(r.contains("HTTP version HTTP/3.1 is not supported"), r);
    assertEquals(0, backend.calls.get());
    String minor = exchange(post("/v1/completions", "HTTP/1.2", utf8(COMPLETION)));
    assertTrue(minor.startsWith("HTTP/1.1 200 "), "a higher minor version is served as 1.1: " + minor);
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"/v1/completions", "/v1/chat/completions", "/v1/messages", "/v1/responses",
      "/v1/messages/count_tokens"})
  void bodiesAreUtf8OnEveryEndpointAlike(String path) throws Exception {
    String json = path.equals("/v1/completions") ? COMPLETION : path.equals("/v1/responses")
        ? "{\"model\": \"test-model\", \"input\": \"hi\", \"max_output_tokens\": 16}" : CHAT;
    ByteArrayOutputStream bom = new ByteArrayOutputStream();
    bom.writeBytes(new byte[] {(byte) 0xef, (byte) 0xbb, (byte) 0xbf});
    bom.writeBytes(utf8(json));
    String withBom = exchange(post(path, "HTTP/1.1", bom.toByteArray()));
    assertTrue(!withBom.startsWith("HTTP/1.1 400"), "a UTF-8 byte order mark is ignored: " + withBom);
    for (Charset cs : new Charset[] {StandardCharsets.UTF_16LE, StandardCharsets.UTF_16, Charset.forName("UTF-32BE")}) {
      String r = exchange(post(path, "HTTP/1.1", json.getBytes(cs)));
      assertTrue(r.startsWith("HTTP/1.1 400") && r.contains("must be UTF-8"), cs + ": " + r);
    }
    String content = json.replace("\"hi\"", "\"h\u0001i\"");
    for (byte[] bad : new byte[][] {{(byte) 0xc0, (byte) 0xaf}, {(byte) 0xed, (byte) 0xa0, (byte) 0x80},
        {(byte) 0xf4, (byte) 0x90, (byte) 0x80, (byte) 0x80}}) {
      byte[] b = utf8(content);
      int at = content.indexOf('\u0001');
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      out.write(b, 0, at);
      out.writeBytes(bad);
      out.write(b, at + 1, b.length - at - 1);
      String r = exchange(post(path, "HTTP/1.1", out.toByteArray()));
      assertTrue(r.startsWith("HTTP/1.1 400") && r.contains("not valid UTF-8"), r);
    }
  }

  @Test
  void aSessionHeaderThatIsNotUtf8Is400NamingIt() throws Exception {
    String valid = exchange(post("/v1/completions", "HTTP/1.1", utf8(COMPLETION),
        new String(utf8("X-Session-ID: sess-é"), StandardCharsets.ISO_8859_1)));
    assertTrue(valid.startsWith("HTTP/1.1 200"), valid);
    for (String bytes : new String[] {"\u00c0\u00af", "\u00ed\u00a0\u0080", "\u00f4\u0090\u0080\u0080"}) {
      String r = exchange(post("/v1/completions", "HTTP/1.1", utf8(COMPLETION), "X-Session-ID: s" + bytes));
      assertTrue(r.startsWith("HTTP/1.1 400") && r.contains("not valid UTF-8") && r.contains("x-session-id"), r);
    }
  }
}
