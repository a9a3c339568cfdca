package dev.affinity.server.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.protocol.InternalAuth;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;

/** The frontend in front of trtllm-serve workers (fakes built from the upstream shapes), over real HTTP. */
class TrtllmFleetEndToEndTest {
  static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void aSubAgentRequestCrossesBothTrtllmServeWorkers() throws Exception {
    try (FakeTrtllmServe ctx = FakeTrtllmServe.start(); FakeTrtllmServe gen = FakeTrtllmServe.start()) {
      String yaml = """
          hostname: 127.0.0.1
          port: 8000
          internal_request_auth_key: "k-123"
          conversation_affinity_header_for_subagents: X-Dynamo-Parent-Session-ID
          context_servers:
            num_instances: 1
            urls: ["127.0.0.1:%d"]
            router: {type: conversation}
          generation_servers:
            num_instances: 1
            urls: ["127.0.0.1:%d"]
            router: {type: load_balancing}
          affinity: {model: m, debug_headers: true}
          """.formatted(ctx.port(), gen.port());
      DisaggConfig cfg = ConfigLoader.parse(yaml, "fleet.yaml").config();
      try (AffinityServer server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "t").withPort(0).withAccessLog(AccessLog.none()))) {
        assertEquals(2, server.workers().size(), "both workers joined");
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + server.port() + "/v1/completions"))
            .header("Content-Type", "application/json").header("X-Session-ID", "child-1")
            .header("X-Dynamo-Parent-Session-ID", "parent-1")
            .POST(HttpRequest.BodyPublishers.ofString("{\"model\": \"m\", \"prompt\": \"hi\", \"max_tokens\": 3, \"x_kept\": 1}"))
            .build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        assertTrue(r.headers().firstValue("x-affinity-route").orElse("").contains("affinity=parent-1"), r.headers().toString());

        FakeTrtllmServe.Received c = ctx.last("/v1/completions");
        JsonNode cb = c.json();
        assertEquals("context_only", cb.at("/disaggregated_params/request_type").asText());
        assertEquals("child-1", cb.at("/conversation_params/conversation_id").asText());
        assertEquals(1, cb.path("x_kept").asInt(), "client fields are forwarded");
        assertEquals("parent-1", c.header("x-trtllm-subagent-affinity-id"));
        assertTrue(c.header("x-trtllm-subagent-affinity-auth").startsWith("sha256="));

        FakeTrtllmServe.Received g = gen.last("/v1/completions");
        JsonNode gb = g.json();
        assertEquals("generation_only", gb.at("/disaggregated_params/request_type").asText());
        assertEquals(FakeTrtllmServe.OPAQUE_STATE, gb.at("/disaggregated_params/encoded_opaque_state").asText());
        assertEquals(cb.at("/disaggregated_params/disagg_request_id").asLong(), gb.at("/disaggregated_params/disagg_request_id").asLong());
        assertNull(g.header("x-trtllm-subagent-affinity-id"), "scope context: generation is not pinned to the parent");
        dev.affinity.protocol.DisaggregatedParams sent = new dev.affinity.protocol.ProtocolCodec()
            .parseCompletionRequest(g.body()).disaggregatedParams();
        assertTrue(new InternalAuth("k-123").verifyDisagg(sent, g.header("x-trtllm-disagg-auth")), "the generation leg is signed");
      }
    }
  }
}
