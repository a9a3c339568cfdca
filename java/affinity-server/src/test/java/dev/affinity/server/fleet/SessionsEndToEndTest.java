package dev.affinity.server.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.server.http.FrontendOptions;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Nested sub-agents and session lifecycle over real HTTP on the embedded default fleet (two context workers of
 * two ranks each): a grandchild's context leg lands on its root's worker and rank, the route header names the
 * root as the affinity id, and {@code X-Dynamo-Session-Final: true} releases a session's pin and parent link.
 */
class SessionsEndToEndTest {
  static AffinityServer server;
  static HttpClient http;
  static String base;
  static final String BODY = "{\"model\": \"affinity-sim\", \"messages\": [{\"role\": \"system\", \"content\": \""
      + "You are a careful coding agent with tools. ".repeat(30) + "\"}, {\"role\": \"user\", \"content\": \"%s\"}], "
      + "\"max_tokens\": 3}";

  @BeforeAll
  static void start() throws Exception {
    String yaml;
    try (InputStream in = SessionsEndToEndTest.class.getResourceAsStream("/dev/affinity/server/sim-workers.yaml")) {
      yaml = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    yaml = yaml.replace("      preset: llama3-70b-h100-tp8\n      kv_blocks_per_rank: 8192",
            "      preset: llama3-70b-h100-tp8\n      time_scale: 0.01\n      kv_blocks_per_rank: 8192")
        .replace("    generation:\n      instances: 1\n      ranks: 2\n      preset: llama3-70b-h100-tp8",
            "    generation:\n      instances: 1\n      ranks: 2\n      preset: llama3-70b-h100-tp8\n      time_scale: 0.01")
        // the list form: the first header present wins
        .replace("conversation_affinity_header_for_subagents: X-Dynamo-Parent-Session-ID",
            "conversation_affinity_header_for_subagents: [X-Dynamo-Parent-Session-ID, X-Parent-Agent]");
    DisaggConfig cfg = ConfigLoader.parse(yaml, "default").config();
    server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, AffinityServer.VERSION).withPort(0)
        .withAccessLog(dev.affinity.server.http.AccessLog.none()));
    base = "http://127.0.0.1:" + server.port();
    http = HttpClient.newHttpClient();
  }

  @AfterAll
  static void stop() {
    server.close();
  }

  static HttpResponse<String> chat(String content, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + "/v1/chat/completions"))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(BODY.formatted(content)));
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    return r;
  }

  static String route(HttpResponse<?> r, String key) {
    for (String part : r.headers().firstValue("x-affinity-route").orElse("").split("; ")) {
      if (part.startsWith(key + "=")) {
        return part.substring(key.length() + 1);
      }
    }
    return null;
  }

  static String metric(String name) throws Exception {
    String text = http.send(HttpRequest.newBuilder(URI.create(base + "/metrics")).build(),
        HttpResponse.BodyHandlers.ofString()).body();
    return text.lines().filter(l -> l.startsWith(name + " ") || l.startsWith(name + "{")).findFirst().orElse(null);
  }

  @Test
  void grandchildrenRunOnTheirRootsContextWorkerAndRank() throws Exception {
    HttpResponse<String> root = chat("plan", "X-Session-ID", "root-n");
    HttpResponse<String> child = chat("delegate", "X-Session-ID", "child-n", "X-Dynamo-Parent-Session-ID", "root-n");
    assertEquals("root-n", route(child, "affinity"));
    for (int i = 0; i < 4; i++) {
      // the second header of the list when the first is absent
      HttpResponse<String> grandchild = chat("task " + i, "X-Session-ID", "grandchild-" + i,
          i % 2 == 0 ? "X-Dynamo-Parent-Session-ID" : "X-Parent-Agent", "child-n");
      assertEquals("grandchild-" + i, route(grandchild, "conversation"), "the own id is kept");
      assertEquals("root-n", route(grandchild, "affinity"), "the root's id is the affinity id");
      assertEquals(route(root, "ctx"), route(grandchild, "ctx"));
      assertEquals(route(root, "ctx_rank"), route(grandchild, "ctx_rank"), "the executor served it on the root's rank");
    }
    HttpResponse<String> great = chat("deeper", "X-Session-ID", "great-n", "X-Dynamo-Parent-Session-ID", "grandchild-3");
    assertEquals("root-n", route(great, "affinity"));
    assertEquals(route(root, "ctx") + "#" + route(root, "ctx_rank"), route(great, "ctx") + "#" + route(great, "ctx_rank"));
  }

  @Test
  void aFinalRequestReleasesItsSessionsPinAndParentLinkOnceAnswered() throws Exception {
    chat("plan", "X-Session-ID", "root-f");
    chat("delegate", "X-Session-ID", "child-f", "X-Dynamo-Parent-Session-ID", "root-f");
    assertEquals("root-f", server.parentLinks().parentOf("child-f"));
    int live = server.sessions().live();
    assertTrue(metric("affinity_sessions_live").endsWith(" " + (double) live), metric("affinity_sessions_live"));

    // the child's last turn still routes with its parent; then its link is gone
    HttpResponse<String> last = chat("done", "X-Session-ID", "child-f", "X-Dynamo-Parent-Session-ID", "root-f",
        "X-Dynamo-Session-Final", "true");
    assertEquals("root-f", route(last, "affinity"));
    assertNull(server.parentLinks().parentOf("child-f"));
    assertEquals(live - 1, server.sessions().live());
    // a grandchild naming the ended child now has the child as its root (no link above it)
    HttpResponse<String> orphan = chat("late", "X-Session-ID", "grandchild-f", "X-Dynamo-Parent-Session-ID", "child-f");
    assertEquals("child-f", route(orphan, "affinity"));

    // the root's own pin: released by its final turn, so the pinned-key count drops by one
    double pinsBefore = Double.parseDouble(metric("affinity_session_pins{fleet=\"context\"}").split(" ")[1]);
    chat("bye", "X-Session-ID", "root-f", "X-Dynamo-Session-Final", "TRUE");
    double pinsAfter = Double.parseDouble(metric("affinity_session_pins{fleet=\"context\"}").split(" ")[1]);
    assertEquals(pinsBefore - 1, pinsAfter, 0.0);
    assertTrue(Double.parseDouble(metric("affinity_sessions_ended_total").split(" ")[1]) >= 2);
  }
}
