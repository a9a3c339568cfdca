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

/**
 * {@code affinity.tenant_isolation} with two API keys over real HTTP: one key can neither follow another's
 * conversation or parent to its worker and rank nor reuse its KV blocks (cached_tokens stays 0), while
 * each key keeps its own affinity and reuse.
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
}
