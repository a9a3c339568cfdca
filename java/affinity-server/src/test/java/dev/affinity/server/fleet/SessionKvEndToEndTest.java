package dev.affinity.server.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.worker.Worker;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * With the per-conversation reuse policy, an ended session's KV is dropped at once: the embedded context worker
 * retains each conversation's last turn, and {@code X-Dynamo-Session-Final: true} on a session's last request frees
 * what only that session retained (a prefix another live session retains stays).
 */
class SessionKvEndToEndTest {
  static final String CONFIG = """
      hostname: 127.0.0.1
      port: 8000
      context_servers: {num_instances: 1, router: {type: conversation}}
      generation_servers: {num_instances: 1, router: {type: load_balancing}}
      affinity:
        model: affinity-sim
        workers:
          context:
            instances: 1
            ranks: 1
            time_scale: 0.01
            executor: {block_reuse: {policy: per_conversation}}
          generation: {instances: 1, ranks: 1, time_scale: 0.01}
      """;
  static final String SYSTEM = "You are a careful coding agent with tools. ".repeat(30);

  private AffinityServer server;
  private final HttpClient http = HttpClient.newHttpClient();

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  private void chat(String session, String content, boolean last) throws Exception {
    String body = "{\"model\": \"affinity-sim\", \"messages\": [{\"role\": \"system\", \"content\": \"" + SYSTEM
        + "\"}, {\"role\": \"user\", \"content\": \"" + content + "\"}], \"max_tokens\": 3}";
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port()
        + "/v1/chat/completions")).header("Content-Type", "application/json").header("X-Session-ID", session)
        .POST(HttpRequest.BodyPublishers.ofString(body));
    if (last) {
      b.header("X-Dynamo-Session-Final", "true");
    }
    HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
  }

  private long cached(Worker ctx) {
    return ctx.kvCacheStats(0).cachedNumBlocks();
  }

  @Test
  void anEndedSessionsRetainedTurnIsDroppedAndASharedPrefixStays() throws Exception {
    DisaggConfig cfg = ConfigLoader.parse(CONFIG, "session-kv.yaml").config();
    server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "t").withPort(0).withAccessLog(AccessLog.none()));
    Worker ctx = server.service().contextRouter().workers().get(0);

    chat("keep", "first question of the session that stays", false);
    long one = cached(ctx);
    assertTrue(one > 0, "the turn is retained");
    chat("end", "another session's question, with the same system prompt", false);
    long both = cached(ctx);
    assertTrue(both > one, "the second session retains its own blocks beyond the shared prefix: " + one + " / " + both);

    chat("end", "its last turn", true);
    await(() -> cached(ctx) < both, "the ended session's blocks are dropped");
    assertEquals(one, cached(ctx), "exactly the live session's turn stays, the prefix it shares included");
  }

  /** Waits for a state the system reaches on its own (the bound only stops a broken build). */
  private static void await(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("never happened: " + what);
      }
      Thread.sleep(10);
    }
  }
}
