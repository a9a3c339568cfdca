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

  /**
   * Upstream's {@code gen_tokids_ctxbytes} and {@code gen_strip_message_history} (TensorRT-LLM's
   * {@code tensorrt_llm/serve/openai_disagg_service.py}, {@code _get_ctx_request} and {@code _get_gen_request}): the
   * context leg asks for base64 ids, the generation leg carries the context answer's string verbatim and only the last
   * message (tools kept); without them, the ids as an array and every message.
   */
  @Test
  void baseSixtyFourIdsAndAStrippedHistoryFollowUpstreamsOptions() throws Exception {
    for (boolean on : new boolean[] {true, false}) {
      try (FakeTrtllmServe ctx = FakeTrtllmServe.start(); FakeTrtllmServe gen = FakeTrtllmServe.start()) {
        try (AffinityServer server = frontend(ctx, gen,
            "gen_tokids_ctxbytes: %s\ngen_strip_message_history: %s\n".formatted(on, on))) {
          String chat = "{\"model\": \"m\", \"max_tokens\": 3, \"tools\": [{\"type\": \"function\", \"function\": "
              + "{\"name\": \"read\", \"parameters\": {}}}], \"messages\": [{\"role\": \"system\", \"content\": \"s\"}, "
              + "{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"user\", \"content\": \"last\"}]}";
          HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                  URI.create("http://127.0.0.1:" + server.port() + "/v1/chat/completions"))
              .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(chat)).build(),
              HttpResponse.BodyHandlers.ofString());
          assertEquals(200, r.statusCode(), r.body());
          assertTrue(r.body().contains("chatcmpl-gen"), r.body());

          JsonNode cb = ctx.last("/v1/chat/completions").json();
          assertEquals(on, cb.at("/disaggregated_params/return_prompt_token_ids_b64").asBoolean(false), cb.toString());
          assertEquals(3, cb.path("messages").size(), "the context leg renders the whole history");
          JsonNode gb = gen.last("/v1/chat/completions").json();
          if (on) {
            assertEquals(FakeTrtllmServe.PROMPT_IDS_B64, gb.path("prompt_token_ids_b64").asText(), gb.toString());
            assertTrue(gb.path("prompt_token_ids").isMissingNode(), gb.toString());
            assertEquals(1, gb.path("messages").size(), gb.toString());
            assertEquals("last", gb.at("/messages/0/content").asText());
          } else {
            assertEquals("[1,2,3,4]", gb.path("prompt_token_ids").toString(), gb.toString());
            assertTrue(gb.path("prompt_token_ids_b64").isMissingNode(), gb.toString());
            assertEquals(3, gb.path("messages").size(), gb.toString());
          }
          assertEquals("read", gb.at("/tools/0/function/name").asText(), "tools are kept");
        }
      }
    }
  }

  /**
   * A conversation's turns with a long history, over real sockets: each turn's messages' JSON shares the last turn's
   * pieces and the legs hand the long ones to the socket as they lie (protocol/JsonRope, SplicedBody). Both workers
   * receive every message the client sent, as sent, at every turn, and the body parses whole.
   */
  @Test
  void aLongConversationsLegsCarryItsWholeHistoryAtEveryTurn() throws Exception {
    try (FakeTrtllmServe ctx = FakeTrtllmServe.start(); FakeTrtllmServe gen = FakeTrtllmServe.start()) {
      try (AffinityServer server = frontend(ctx, gen, "")) {
        com.fasterxml.jackson.databind.node.ObjectNode body = JSON.createObjectNode().put("model", "m")
            .put("max_tokens", 3);
        com.fasterxml.jackson.databind.node.ArrayNode messages = body.putArray("messages");
        messages.addObject().put("role", "system")
            .put("content", "You are an agent. \"Quotes\", caf\u00e9, \u4e2d\u6587 and \ud83d\ude00.\n".repeat(800));
        java.util.Random r = new java.util.Random(46);
        HttpClient client = HttpClient.newHttpClient();
        for (int turn = 0; turn < 6; turn++) {
          messages.addObject().put("role", "user").put("content", "step " + turn + ": " + "word ".repeat(r.nextInt(5000)));
          HttpResponse<String> answer = client.send(HttpRequest.newBuilder(
                  URI.create("http://127.0.0.1:" + server.port() + "/v1/chat/completions"))
              .header("Content-Type", "application/json").header("X-Session-ID", "long-1")
              .POST(HttpRequest.BodyPublishers.ofString(body.toString())).build(), HttpResponse.BodyHandlers.ofString());
          assertEquals(200, answer.statusCode(), answer.body());
          assertEquals(messages, ctx.last("/v1/chat/completions").json().path("messages"), "turn " + turn);
          assertEquals(messages, gen.last("/v1/chat/completions").json().path("messages"), "turn " + turn);
          messages.addObject().put("role", "assistant").put("content", "done " + turn + " " + "ok ".repeat(r.nextInt(3000)));
        }
      }
    }
  }

  /** A frontend in front of one context and one generation fake, with {@code top} as more top-level lines. */
  private static AffinityServer frontend(FakeTrtllmServe ctx, FakeTrtllmServe gen, String top) throws Exception {
    String yaml = top + """
        hostname: 127.0.0.1
        port: 8000
        context_servers: {num_instances: 1, urls: ["127.0.0.1:%d"]}
        generation_servers: {num_instances: 1, urls: ["127.0.0.1:%d"]}
        affinity: {model: m}
        """.formatted(ctx.port(), gen.port());
    DisaggConfig cfg = ConfigLoader.parse(yaml, "fleet.yaml").config();
    return AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "t").withPort(0).withAccessLog(AccessLog.none()));
  }
}
