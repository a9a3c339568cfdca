package dev.affinity.bench.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.bench.compare.FleetConfigs;
import dev.affinity.bench.compare.Policy;
import dev.affinity.bench.drive.IdealCache;
import dev.affinity.bench.drive.OutgoingRequest;
import dev.affinity.bench.metrics.RequestRecord;
import dev.affinity.bench.trace.BlockTokens;
import dev.affinity.bench.trace.TraceRequest;
import dev.affinity.config.DisaggConfig;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.http.FrontendOptions;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The simulator runs the orchestration and routers that {@code serve} runs: the same classes, built
 * by the same code, and the same routing decisions for the same requests.
 */
class SameAsServeTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void everyPolicyBuildsTheSameServiceAndRouterClassesAsServe() throws Exception {
    FleetConfigs fleet = SimFixtures.smallFleet();
    for (Policy policy : Policy.builtIn()) {
      DisaggConfig config = fleet.under(policy);
      try (SimFleet sim = new SimFleet(config, (e, r) -> { });
          AffinityServer server = AffinityServer.start(config, FrontendOptions.fromConfig(config, "test").withPort(0))) {
        assertSame(server.service().contextRouter().getClass(), sim.service().contextRouter().getClass(), policy.name());
        assertSame(server.service().generationRouter().getClass(), sim.service().generationRouter().getClass(), policy.name());
        assertEquals(server.service().contextRouter().stats().type(), config.context().router().type());
      }
    }
  }

  /**
   * Policies whose decisions do not depend on when KV events arrive (serve polls them; the simulator
   * delivers them at once) route the same requests to the same instances and ranks, with the same
   * reuse, in both.
   */
  @Test
  void simulatorAndServeRouteAlike() throws Exception {
    FleetConfigs fleet = SimFixtures.smallFleet();
    for (Policy policy : List.of(Policy.named("conversation+header"), Policy.named("round_robin"))) {
      DisaggConfig config = fleet.under(policy);
      List<TraceRequest> requests = requests();
      List<String> simulated = new ArrayList<>();
      List<String> served = new ArrayList<>();
      try (SimFleet sim = new SimFleet(config, (e, r) -> { });
          AffinityServer server = AffinityServer.start(config, FrontendOptions.fromConfig(config, "test").withPort(0))) {

        SimTransport transport = new SimTransport(sim, new BlockTokens(32000, 0), "affinity-sim",
            "x-claude-code-session-id", Policy.SUBAGENT_HEADER, true);
        IdealCache ideal = new IdealCache(32);
        HttpClient http = HttpClient.newHttpClient();
        for (int i = 0; i < requests.size(); i++) {
          TraceRequest r = requests.get(i);
          // One at a time, each after the previous one finished: the same state for both at every decision.
          RequestRecord[] rec = new RequestRecord[1];
          transport.send(new OutgoingRequest(i, r, r.sessionId(), ideal.reuse(r)), x -> rec[0] = x);
          sim.run();
          simulated.add(rec[0].ctxWorker() + "/" + rec[0].ctxRank() + " reused " + rec[0].reusedTokens());
          served.add(serve(http, server.port(), r));
        }
      }
      assertEquals(simulated, served, "policy " + policy.name());
    }
  }

  /** A parent's two turns and two sub-agents' calls, sharing its prefix. */
  private static List<TraceRequest> requests() {
    List<Long> base = List.of(1L, 2L, 3L, 4L);
    return List.of(
        new TraceRequest(0, "parent", null, 256, 8, 64, base),
        new TraceRequest(0, "parent", null, 320, 8, 64, List.of(1L, 2L, 3L, 4L, 5L)),
        new TraceRequest(0, "child-a", "parent", 200, 8, 64, List.of(10L, 11L, 12L, 13L)),
        new TraceRequest(0, "child-b", "parent", 200, 8, 64, List.of(10L, 11L, 12L, 14L)));
  }

  private static String serve(HttpClient http, int port, TraceRequest r) throws Exception {
    var body = JSON.createObjectNode();
    body.put("model", "affinity-sim");
    var prompt = body.putArray("prompt");
    for (int t : new BlockTokens(32000, 0).tokens(r)) {
      prompt.add(t);
    }
    body.put("max_tokens", r.outputLength());
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/completions"))
        .header("content-type", "application/json").header("x-claude-code-session-id", r.sessionId())
        .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)));
    if (r.parentSessionId() != null) {
      b.header(Policy.SUBAGENT_HEADER, r.parentSessionId());
    }
    HttpResponse<String> resp = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, resp.statusCode(), resp.body());
    String route = resp.headers().firstValue("x-affinity-route").orElseThrow();
    String ctx = null;
    String rank = null;
    String reused = null;
    for (String part : route.split(";")) {
      String[] kv = part.trim().split("=", 2);
      switch (kv[0]) {
        case "ctx" -> ctx = kv[1];
        case "ctx_rank" -> rank = kv[1];
        case "reused" -> reused = kv[1];
        default -> { }
      }
    }
    JsonNode cached = JSON.readTree(resp.body()).path("usage").path("prompt_tokens_details").path("cached_tokens");
    assertTrue(cached.isInt(), "usage reports cached tokens: " + resp.body());
    assertEquals(Integer.parseInt(reused), cached.asInt(), "the route header and the usage agree");
    return ctx + "/" + rank + " reused " + reused;
  }
}
