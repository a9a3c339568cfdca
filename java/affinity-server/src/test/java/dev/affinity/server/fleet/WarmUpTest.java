package dev.affinity.server.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.ConfigException;
import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.server.http.FrontendServer;
import io.netty.channel.EventLoopGroup;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The warm-up runs the configured path on a throw-away copy and answers every request it sends. */
class WarmUpTest {
  @Test
  void remoteFleetsAreWarmedThroughLoopbackWorkerServers() throws Exception {
    DisaggConfig cfg = ConfigLoader.parse("""
        hostname: 127.0.0.1
        port: 8000
        conversation_affinity_header_for_subagents: X-Dynamo-Parent-Session-ID
        context_servers: {num_instances: 1, urls: ["127.0.0.1:1"], router: {type: conversation}}
        generation_servers: {num_instances: 1, urls: ["127.0.0.1:2"], router: {type: load_balancing}}
        affinity: {model: affinity-sim, warm_up_requests: 300}
        """, "remote").config();
    WarmUp.Result r = WarmUp.run(cfg);
    assertEquals(300, r.answered() + r.abandoned(), r.toString());
    assertEquals(0, r.failed(), r.toString());
    assertTrue(r.abandoned() > 0 && r.abandoned() < 30, "some clients give up, most wait: " + r);
  }

  @Test
  void embeddedFleetsAreWarmedWithZeroCostExecutors() throws Exception {
    DisaggConfig cfg = ConfigLoader.parse("""
        hostname: 127.0.0.1
        port: 8000
        context_servers: {num_instances: 1, router: {type: affinity}}
        generation_servers: {num_instances: 1, router: {type: load_balancing}}
        affinity:
          model: affinity-sim
          warm_up_requests: 200
          workers:
            context: {instances: 1, ranks: 2, time_scale: 0.01}
            generation: {instances: 1, ranks: 2, time_scale: 0.01}
        """, "embedded").config();
    WarmUp.Result r = WarmUp.run(cfg);
    assertEquals(200, r.answered() + r.abandoned(), r.toString());
    assertEquals(0, r.failed(), r.toString());
  }

  @Test
  void theWarmUpAndTheFrontendShareTheCallersEventLoopsAndLeaveThemRunning() throws Exception {
    DisaggConfig cfg = ConfigLoader.parse("""
        hostname: 127.0.0.1
        port: 8000
        context_servers: {num_instances: 1, router: {type: conversation}}
        generation_servers: {num_instances: 1, router: {type: load_balancing}}
        affinity:
          model: affinity-sim
          warm_up_requests: 200
          io_threads: 1
          workers:
            context: {instances: 1, ranks: 2, time_scale: 0.01}
            generation: {instances: 1, ranks: 2, time_scale: 0.01}
        """, "shared").config();
    FrontendOptions options = FrontendOptions.fromConfig(cfg, AffinityServer.VERSION).withPort(0);
    EventLoopGroup io = FrontendServer.ioGroup(options.ioThreads());
    try {
      WarmUp.Result r = WarmUp.run(cfg, io);
      assertEquals(200, r.answered() + r.abandoned(), r.toString());
      assertFalse(io.isShuttingDown(), "closing the warm-up's copies leaves the caller's loops running");
      try (AffinityServer server = AffinityServer.start(cfg, options, io)) {
        HttpResponse<String> answer = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + server.port() + "/v1/completions"))
            .POST(HttpRequest.BodyPublishers.ofString("{\"model\": \"affinity-sim\", \"prompt\": \"hi\", "
                + "\"max_tokens\": 2}")).header("Content-Type", "application/json").build(),
            HttpResponse.BodyHandlers.ofString());
        assertEquals(200, answer.statusCode(), answer.body());
      }
      assertFalse(io.isShuttingDown(), "the frontend does not shut down loops it was given");
    } finally {
      io.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly();
    }
  }

  @Test
  void zeroTurnsItOffAndANegativeCountIsAConfigError() throws Exception {
    DisaggConfig off = ConfigLoader.parse("""
        context_servers: {num_instances: 1, urls: ["127.0.0.1:1"]}
        generation_servers: {num_instances: 1, urls: ["127.0.0.1:2"]}
        affinity: {warm_up_requests: 0}
        """, "off").config();
    assertEquals(new WarmUp.Result(0, 0, 0, java.time.Duration.ZERO), WarmUp.run(off));
    ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.parse("""
        context_servers: {num_instances: 1, urls: ["127.0.0.1:1"]}
        generation_servers: {num_instances: 1, urls: ["127.0.0.1:2"]}
        affinity: {warm_up_requests: -5}
        """, "negative"));
    assertTrue(e.getMessage().contains("affinity.warm_up_requests"), e.getMessage());
  }

  @Test
  void theBodiesMixChatsCompletionsAndStreams() {
    assertTrue(WarmUp.body(0, "m").contains("\"messages\"") && WarmUp.body(0, "m").contains("\"stream\": false"));
    assertTrue(WarmUp.body(1, "m").contains("\"prompt\""));
    assertTrue(WarmUp.body(2, "m").contains("\"stream\": true"));
    assertTrue(WarmUp.body(63, "m").length() > dev.affinity.admission.PromptTokenizer.LONG_PROMPT_CHARS);
    assertEquals(WarmUp.body(1, "m"), WarmUp.body(1 + 256, "m"), "one in four repeats a prompt seen before");
    assertTrue(!WarmUp.body(17, "m").equals(WarmUp.body(17 + 256, "m")), "the others are new");
  }
}
