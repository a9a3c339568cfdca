package dev.affinity.server.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A worker answer that does not carry what its leg's contract requires (docs/workers.md, "What a worker's answer must
 * carry") is the worker's failure, never the client's success: through the real HTTP frontend, for every endpoint,
 * streamed and not, a context worker that answers {@code 200 {}} is a 502 naming the missing
 * {@code choices[0].disaggregated_params} (and no generation leg is sent), and a generation worker that answers
 * {@code 200 {}} (or, streamed, choiceless chunks then {@code [DONE]}) is a 502 naming the missing choice. With
 * {@code max_retries: 0} the failure goes to the client as it is.
 */
class WorkerAnswerContractTest {
  static FakeTrtllmServe ctx;
  static FakeTrtllmServe gen;
  static AffinityServer server;
  static final HttpClient HTTP = HttpClient.newHttpClient();

  @BeforeAll
  static void start() throws Exception {
    ctx = FakeTrtllmServe.start();
    gen = FakeTrtllmServe.start();
    String yaml = """
        hostname: 127.0.0.1
        port: 8000
        max_retries: 0
        context_servers: {num_instances: 1, urls: ["127.0.0.1:%d"], router: {type: round_robin}}
        generation_servers: {num_instances: 1, urls: ["127.0.0.1:%d"], router: {type: round_robin}}
        affinity: {model: m}
        """.formatted(ctx.port(), gen.port());
    DisaggConfig cfg = ConfigLoader.parse(yaml, "contract.yaml").config();
    server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "t").withPort(0).withAccessLog(AccessLog.none()));
  }

  @AfterAll
  static void stop() throws Exception {
    if (server != null) {
      server.close();
    }
    gen.close();
    ctx.close();
  }

  /** The client's request body on {@code path}. */
  static String body(String path, boolean stream) {
    return switch (path) {
      case "/v1/chat/completions" -> "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}],"
          + " \"max_tokens\": 3, \"stream\": " + stream + "}";
      case "/v1/completions" -> "{\"model\": \"m\", \"prompt\": \"hi\", \"max_tokens\": 3, \"stream\": " + stream + "}";
      case "/v1/messages" -> "{\"model\": \"m\", \"max_tokens\": 3, \"messages\": [{\"role\": \"user\","
          + " \"content\": \"hi\"}], \"stream\": " + stream + "}";
      case "/v1/responses" -> "{\"model\": \"m\", \"input\": \"hi\", \"max_output_tokens\": 3, \"store\": false,"
          + " \"stream\": " + stream + "}";
      default -> throw new IllegalArgumentException(path);
    };
  }

  static HttpResponse<String> post(String path, boolean stream) throws Exception {
    return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path))
        .header("Content-Type", "application/json").header("anthropic-version", "2023-06-01")
        .POST(HttpRequest.BodyPublishers.ofString(body(path, stream))).build(), HttpResponse.BodyHandlers.ofString());
  }

  static String legPath(String path) {
    return path.equals("/v1/completions") ? "/v1/completions" : "/v1/chat/completions";
  }

  @ParameterizedTest(name = "{0} stream={1}")
  @CsvSource({"/v1/chat/completions, false", "/v1/chat/completions, true", "/v1/completions, false",
      "/v1/completions, true", "/v1/messages, false", "/v1/messages, true", "/v1/responses, false",
      "/v1/responses, true"})
  void aContextAnswerWithoutDisaggregatedParamsIsA502NamingThem(String path, boolean stream) throws Exception {
    String leg = legPath(path);
    int genLegs = gen.received(leg).size();
    ctx.enqueue(FakeTrtllmServe.Behavior.raw("application/json", "{}"));

    HttpResponse<String> r = post(path, stream);

    assertEquals(502, r.statusCode(), r.body());
    assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("application/json"), r.headers().toString());
    assertTrue(r.body().contains("context worker") && r.body().contains("choices[0].disaggregated_params"), r.body());
    assertEquals(genLegs, gen.received(leg).size(), "only the context leg was sent");
  }

  @ParameterizedTest(name = "{0} stream={1}")
  @CsvSource({"/v1/chat/completions, false", "/v1/chat/completions, true", "/v1/completions, false",
      "/v1/completions, true", "/v1/messages, false", "/v1/messages, true", "/v1/responses, false",
      "/v1/responses, true"})
  void aGenerationAnswerWithoutAChoiceIsA502NamingIt(String path, boolean stream) throws Exception {
    gen.enqueue(stream
        ? FakeTrtllmServe.Behavior.raw("text/event-stream", "data: {}\n\ndata: {\"choices\": []}\n\ndata: [DONE]\n\n")
        : FakeTrtllmServe.Behavior.raw("application/json", "{}"));

    HttpResponse<String> r = post(path, stream);

    assertEquals(502, r.statusCode(), r.body());
    assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("application/json"), r.headers().toString());
    assertTrue(r.body().contains("generation worker") && r.body().contains("choice"), r.body());
  }

  @ParameterizedTest(name = "{0} stream={1}")
  @CsvSource({"/v1/chat/completions, false", "/v1/chat/completions, true", "/v1/completions, false",
      "/v1/completions, true", "/v1/messages, false", "/v1/messages, true", "/v1/responses, false",
      "/v1/responses, true"})
  void workersThatAnswerAsTheContractSaysStillServeEveryEndpoint(String path, boolean stream) throws Exception {
    HttpResponse<String> r = post(path, stream);

    assertEquals(200, r.statusCode(), r.body());
    assertTrue(r.body().contains("tok-"), r.body());
  }
}
