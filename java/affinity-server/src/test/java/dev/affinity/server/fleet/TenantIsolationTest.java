package dev.affinity.server.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code affinity.tenant_isolation} with two API keys over real HTTP: one key can neither follow another's
 * conversation or parent to its worker and rank nor reuse its KV blocks (cached_tokens stays 0) nor end its
 * session, while each key keeps its own affinity and reuse, on every completion endpoint and whichever header
 * ({@code Authorization: Bearer} or {@code x-api-key}) carries the key.
 */
class TenantIsolationTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static final String SYSTEM = "You are a careful coding agent with tools to read, edit and test code. ".repeat(30);
  static AffinityServer server;
  static HttpClient http;

  @BeforeAll
  static void start() throws Exception {
    DisaggConfig cfg = ConfigLoader.parse("""
        context_servers: {num_instances: 2, router: {type: conversation}}
        generation_servers: {num_instances: 1}
        conversation_affinity_header_for_subagents: X-Dynamo-Parent-Session-ID
        affinity:
          session_final_header: X-Session-Final
          model: m
          debug_headers: true
          api_keys: [key-a, key-b]
          tenant_isolation: true
          workers:
            context: {instances: 2, ranks: 2, time_scale: 0.01}
            generation: {instances: 1, time_scale: 0.01}
        """, "tenants.yaml").config();
    server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, AffinityServer.VERSION).withPort(0)
        .withAccessLog(AccessLog.none()));
    http = HttpClient.newHttpClient();
  }

  @AfterAll
  static void stop() {
    server.close();
  }

  record Answer(int status, String route, int cached) {
    String part(String key) {
      for (String p : route.split("; ")) {
        if (p.startsWith(key + "=")) {
          return p.substring(key.length() + 1);
        }
      }
      return null;
    }
  }

  static Answer chat(String key, String session, String parent, String user) throws Exception {
    String body = JSON.writeValueAsString(JSON.createObjectNode().put("model", "m").put("max_tokens", 2)
        .set("messages", JSON.createArrayNode()
            .add(JSON.createObjectNode().put("role", "system").put("content", SYSTEM))
            .add(JSON.createObjectNode().put("role", "user").put("content", user))));
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/v1/chat/completions"))
        .header("Content-Type", "application/json").header("Authorization", "Bearer " + key)
        .header("x-session-id", session).POST(HttpRequest.BodyPublishers.ofString(body));
    if (parent != null) {
      b.header("X-Dynamo-Parent-Session-ID", parent);
    }
    HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    JsonNode cached = r.statusCode() == 200 ? JSON.readTree(r.body()).path("usage").path("prompt_tokens_details")
        .path("cached_tokens") : null;
    return new Answer(r.statusCode(), r.headers().firstValue("x-affinity-route").orElse(""),
        cached == null || cached.isMissingNode() ? 0 : cached.asInt());
  }

  @Test
  void oneKeyCannotFollowOrReuseAnothersConversation() throws Exception {
    Answer first = chat("key-a", "victim", null, "turn one");
    assertEquals(200, first.status());
    Answer again = chat("key-a", "victim", null, "turn two");
    assertEquals(first.part("ctx"), again.part("ctx"), "the key's own conversation stays pinned");
    assertTrue(again.cached() > 0, "the key reuses its own prefix: " + again);

    // Key B's first request claims key A's conversation as its parent: it gets its own namespace and no
    // block of key A, although the prompts are alike.
    Answer child = chat("key-b", "child", "victim", "turn one");
    assertEquals(200, child.status());
    assertEquals(0, child.cached(), "no block of key A is reused by key B: " + child);
    String tenantA = first.part("conversation").substring(0, first.part("conversation").indexOf('/'));
    String tenantB = child.part("conversation").substring(0, child.part("conversation").indexOf('/'));
    assertNotEquals(tenantA, tenantB);
    assertEquals(tenantB + "/victim", child.part("affinity"), "the claimed parent is key B's own name");
    assertTrue(!first.route().contains("key-a") && !child.route().contains("key-b"), "a key never becomes an id");

    // Key B naming the conversation itself: a conversation of its own namespace.
    Answer intruder = chat("key-b", "victim", null, "turn two");
    assertEquals(tenantB + "/victim", intruder.part("conversation"));

    // Key A's own sub-agent follows its parent and reuses the shared prefix.
    Answer ownChild = chat("key-a", "own-child", "victim", "sub task");
    assertEquals(first.part("ctx"), ownChild.part("ctx"));
    assertEquals(first.part("ctx_rank"), ownChild.part("ctx_rank"));
    assertTrue(ownChild.cached() > 0, "the key's sub-agent reuses its parent's prefix: " + ownChild);
  }

  /**
   * A request to {@code endpoint} with a system prompt of its session's own (no other case shares its blocks) and
   * {@code user}'s text, the key in {@code header}.
   */
  static Answer call(String endpoint, String header, String key, String session, String user, boolean last)
      throws Exception {
    String system = session + ": " + SYSTEM;
    var body = JSON.createObjectNode().put("model", "m").put("max_tokens", 2);
    String cachedAt;
    switch (endpoint) {
      case "chat" -> {
        body.set("messages", JSON.createArrayNode()
            .add(JSON.createObjectNode().put("role", "system").put("content", system))
            .add(JSON.createObjectNode().put("role", "user").put("content", user)));
        cachedAt = "/usage/prompt_tokens_details/cached_tokens";
      }
      case "completions" -> {
        body.put("prompt", system + user);
        cachedAt = "/usage/prompt_tokens_details/cached_tokens";
      }
      case "messages" -> {
        body.put("system", system).set("messages", JSON.createArrayNode()
            .add(JSON.createObjectNode().put("role", "user").put("content", user)));
        cachedAt = "/usage/cache_read_input_tokens";
      }
      case "responses" -> {
        body.remove("max_tokens");
        body.put("max_output_tokens", 16).put("instructions", system).put("input", user);
        cachedAt = "/usage/input_tokens_details/cached_tokens";
      }
      default -> throw new IllegalArgumentException(endpoint);
    }
    String path = switch (endpoint) {
      case "chat" -> "/v1/chat/completions";
      case "completions" -> "/v1/completions";
      case "messages" -> "/v1/messages";
      default -> "/v1/responses";
    };
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path))
        .header("Content-Type", "application/json").header("x-session-id", session)
        .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)));
    if (header.equals("bearer")) {
      b.header("Authorization", "Bearer " + key);
    } else {
      b.header("x-api-key", key);
    }
    if (last) {
      b.header("X-Session-Final", "true");
    }
    HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    JsonNode cached = JSON.readTree(r.body()).at(cachedAt);
    assertTrue(cached.isInt(), cachedAt + " in " + r.body());
    return new Answer(r.statusCode(), r.headers().firstValue("x-affinity-route").orElse(""), cached.asInt());
  }

  static String tenant(Answer a) {
    String c = a.part("conversation");
    return c.substring(0, c.indexOf('/'));
  }

  /**
   * Key A's secret prompt, sent with the key in {@code headerA}; key B, with the key in {@code headerB}, names the
   * same session: it lands in its own namespace, reads none of A's cached tokens, and its session-final ends
   * its own session only (A's next turn, with the key in the other header, is still A's, pinned and cached).
   */
  @ParameterizedTest(name = "{0}: A by {1}, B by {2}")
  @CsvSource({
      "chat, bearer, x-api-key", "chat, x-api-key, x-api-key", "chat, x-api-key, bearer",
      "completions, bearer, x-api-key", "completions, x-api-key, x-api-key", "completions, x-api-key, bearer",
      "messages, bearer, x-api-key", "messages, x-api-key, x-api-key", "messages, x-api-key, bearer",
      "responses, bearer, x-api-key", "responses, x-api-key, x-api-key", "responses, x-api-key, bearer"})
  void everyHeaderThatCarriesAKeyScopesToThatKeysTenant(String endpoint, String headerA, String headerB)
      throws Exception {
    String session = "s-" + endpoint + "-" + headerA + "-" + headerB;
    String secret = " secret of A for " + session + ": " + "the launch code is 0451. ".repeat(20);
    Answer a = call(endpoint, headerA, "key-a", session, secret, false);
    Answer b = call(endpoint, headerB, "key-b", session, secret, true);
    assertNotEquals(tenant(a), tenant(b), "two keys are two tenants: " + a + " / " + b);
    assertTrue(!tenant(a).equals("anonymous") && !tenant(b).equals("anonymous"), a + " / " + b);
    assertEquals(tenant(b) + "/" + session, b.part("conversation"));
    assertEquals(0, b.cached(), "key B reads none of key A's cached tokens: " + b);
    String other = headerA.equals("bearer") ? "x-api-key" : "bearer";
    Answer again = call(endpoint, other, "key-a", session, secret + " and more", false);
    assertEquals(tenant(a), tenant(again), "one key is one tenant in either header");
    assertEquals(a.part("ctx"), again.part("ctx"), "key B's session-final left key A's pin in place");
    assertEquals(a.part("ctx_rank"), again.part("ctx_rank"));
    assertTrue(again.cached() > 0, "key A reuses its own prefix: " + again);
  }
}
