package dev.affinity.server.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.conversation.HeaderSource;
import dev.affinity.conversation.PresentedKey;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The frontend's small parts, without a server. */
class FrontendPartsTest {
  @TempDir
  Path dir;

  @Test
  void apiKeysAcceptOnlyConfiguredKeysInEitherHeader() {
    ApiKeys keys = new ApiKeys(List.of("alpha", "beta"));
    assertTrue(keys.enabled());
    assertNull(keys.check(bearer("Bearer alpha")));
    assertNull(keys.check(bearer("bearer beta")));
    assertNull(keys.check(bearer("  BEARER   alpha  ")));
    assertTrue(keys.check(bearer(null)).message().startsWith("missing API key"));
    assertTrue(keys.check(bearer("")).message().startsWith("missing API key"));
    assertTrue(keys.check(bearer("Basic alpha")).message().contains("Bearer scheme"));
    assertEquals("invalid API key", keys.check(bearer("Bearer alph")).message());
    assertEquals("invalid API key", keys.check(bearer("Bearer alphaa")).message());
    assertTrue(keys.check(bearer("Bearer ")).message().startsWith("missing API key"));
    assertNull(keys.check(presented(Map.of("x-api-key", " alpha "))));
    assertEquals("invalid API key", keys.check(presented(Map.of("x-api-key", "gamma"))).message());
    assertTrue(keys.check(presented(Map.of("x-api-key", " "))).message().startsWith("missing API key"));
    assertNull(keys.check(presented(Map.of("x-api-key", "alpha", "authorization", "Bearer alpha"))));
    assertTrue(keys.check(presented(Map.of("x-api-key", "alpha", "authorization", "Bearer beta"))).message()
        .contains("different keys"), "two accepted keys that differ are refused");
    ApiKeys none = new ApiKeys(List.of());
    assertFalse(none.enabled());
    assertNull(none.check(bearer(null)));
  }

  private static PresentedKey bearer(String authorization) {
    return presented(authorization == null ? Map.of() : Map.of("authorization", authorization));
  }

  private static PresentedKey presented(Map<String, String> headers) {
    return PresentedKey.of(HeaderSource.of(headers));
  }

  @Test
  void pathDropsQueryAndFragmentAndAcceptsAbsoluteForm() {
    assertEquals("/v1/models", RequestMeta.path("/v1/models?x=1"));
    assertEquals("/health", RequestMeta.path("/health#frag"));
    assertEquals("/v1/completions", RequestMeta.path("http://host:8000/v1/completions?a=b"));
    assertEquals("/", RequestMeta.path("http://host:8000"));
    assertEquals("*", RequestMeta.path("*"));
  }

  @Test
  void routeHeaderValuesAreAsciiWithoutControls() {
    assertEquals("ctx=a; gen=b", ResponseHeaders.headerSafe("ctx=a; gen=b"));
    assertEquals("a?b?c", ResponseHeaders.headerSafe("a\nb\u00e9c"));
    assertEquals(2048, ResponseHeaders.headerSafe("x".repeat(5000)).length());
  }

  @Test
  void endpointsAreExactPaths() {
    assertEquals(Endpoint.COMPLETIONS, Endpoint.of("/v1/completions"));
    assertEquals(Endpoint.PROMETHEUS_METRICS, Endpoint.of("/prometheus/metrics"));
    assertNull(Endpoint.of("/v1/completions/"));
    assertEquals("other", Endpoint.tag(null));
  }

  @Test
  void accessRecordJsonHasSnakeCaseKeysInOrder() throws Exception {
    AccessRecord r = new AccessRecord("2026-01-01T00:00:00Z", 7, "POST", "/v1/completions", 200, "ok", "m", true,
        "c", null, "c", "c", "ctx", 0, "gen", 1, 16, 1.5, 2.25, 0, 99, "127.0.0.1:5", null);
    String json = r.toJson();
    assertTrue(json.startsWith("{\"time\":\"2026-01-01T00:00:00Z\",\"request_id\":7,\"method\":\"POST\""), json);
    JsonNode n = new ObjectMapper().readTree(json);
    assertTrue(n.get("affinity").isNull());
    assertEquals(16, n.get("reused_tokens").asInt());
    assertEquals("c", n.get("ctx_key").asText(), "the routing keys are logged");
    assertEquals(1.5, n.get("ttft_ms").asDouble());
    assertEquals(99, n.get("bytes").asLong());
  }

  @Test
  void fileAccessLogAppendsJsonLines() throws Exception {
    Path file = dir.resolve("logs/access.jsonl");
    AccessLog log = AccessLog.forSetting(Optional.of(file.toString()));
    AccessRecord r = new AccessRecord("t", 1, "GET", "/health", 200, "ok", null, null, null, null, null, null, null, null,
        null, null, null, null, 0.5, 0, 0, "-", null);
    log.log(r);
    log.log(r);
    log.close();
    log.log(r); // after close: dropped
    List<String> lines = Files.readAllLines(file);
    assertEquals(2, lines.size());
    assertEquals(r.toJson(), lines.get(0));
  }

  @Test
  void accessLogSettingChoosesTheSink() throws Exception {
    assertTrue(AccessLog.forSetting(Optional.of("-")) instanceof LineWriterAccessLog);
    assertFalse(AccessLog.forSetting(Optional.empty()) instanceof LineWriterAccessLog);
  }

  @Test
  void optionsAreValidated() {
    FrontendOptions d = FrontendOptions.defaults();
    assertEquals(16L * 1024 * 1024, d.maxRequestBodyBytes());
    assertEquals(Duration.ofSeconds(30), d.requestReadTimeout());
    assertThrows(IllegalArgumentException.class, () -> d.withPort(70000));
    assertThrows(IllegalArgumentException.class, () -> d.withMaxRequestBodyBytes(0));
    assertThrows(IllegalArgumentException.class, () -> d.withRequestReadTimeout(Duration.ZERO));
    assertThrows(IllegalArgumentException.class, () -> d.withKeepAliveTimeout(Duration.ofSeconds(-1)));
    assertThrows(IllegalArgumentException.class, () -> d.withApiKeys(List.of(" ")));
    assertEquals(Duration.ZERO, d.withKeepAliveTimeout(Duration.ZERO).keepAliveTimeout());
  }

  @Test
  void optionsFromConfig() throws Exception {
    DisaggConfig c = ConfigLoader.parse("hostname: 0.0.0.0\nport: 8123\nserver_keep_alive_timeout: 5\n"
        + "allow_request_chat_template: true\nconversation_affinity_header_for_subagents: X-Parent\n"
        + "context_servers: {urls: [\"c:1\"]}\ngeneration_servers: {urls: [\"g:1\"]}\n"
        + "affinity:\n  model: llama\n  api_keys: [k1]\n  debug_headers: true\n  max_request_body_bytes: 2048\n"
        + "  allow_client_disaggregated_params: true\n  session_headers: [X-Conv]\n  io_threads: 3\n", "test.yaml").config();
    FrontendOptions o = FrontendOptions.fromConfig(c, "1.2.3");
    assertEquals(3, o.ioThreads());
    assertEquals("0.0.0.0", o.host());
    assertEquals(8123, o.port());
    assertEquals(Duration.ofSeconds(5), o.keepAliveTimeout());
    assertEquals(List.of("llama"), o.models());
    assertEquals(List.of("k1"), o.apiKeys());
    assertTrue(o.debugHeaders());
    assertEquals(2048, o.maxRequestBodyBytes());
    assertTrue(o.allowClientDisaggregatedParams());
    assertTrue(o.allowRequestChatTemplate());
    assertEquals(List.of("x-conv"), o.routing().sessionHeaders());
    assertEquals(Optional.of("x-parent"), o.routing().subagentHeader());
    assertEquals("1.2.3", o.version());
  }

  @Test
  void bindFailureIsAnIOException() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
      FrontendOptions o = FrontendOptions.defaults().withPort(taken.getLocalPort());
      IOException e = assertThrows(IOException.class, () -> FrontendServer.start(o, new TestBackend(),
          new PrometheusMeterRegistry(PrometheusConfig.DEFAULT)));
      assertTrue(e.getMessage().contains("cannot bind"), e.getMessage());
    }
  }

  @Test
  void portZeroBindsAFreePort() throws Exception {
    try (FrontendServer s = FrontendServer.start(FrontendOptions.defaults().withAccessLog(AccessLog.none()),
        new TestBackend(), new PrometheusMeterRegistry(PrometheusConfig.DEFAULT))) {
      assertTrue(s.port() > 0);
      assertEquals(s.port(), s.address().getPort());
      assertEquals(0, s.inFlight());
    }
  }
}
