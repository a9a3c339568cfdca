package dev.affinity.server.workermode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.protocol.InternalAuth;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.server.worker.LegAuth;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code POST /release_context} on a keyed worker process: signed releases (audience kv-handoff) are taken, in one
 * request or batched; unsigned, replayed or malformed ones are refused naming why; {@link ContextReleaser} batches
 * the releases to one endpoint.
 */
class ContextReleaseEndpointTest {
  static final String KEY = "release-key";
  static final ObjectMapper JSON = new ObjectMapper();
  final HttpClient http = HttpClient.newHttpClient();
  WorkerServer worker;

  @BeforeEach
  void start() throws Exception {
    worker = WorkerServer.start("{}", WorkerSettings.defaults().withName("ctx-r").withAuthKey(KEY),
        FrontendOptions.defaults().withAccessLog(AccessLog.none()), "t");
  }

  @AfterEach
  void stop() {
    worker.close();
  }

  HttpResponse<String> post(byte[] body, String auth) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + worker.port() + ContextReleaser.PATH))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofByteArray(body));
    if (auth != null) {
      b.header(LegAuth.HEADER, auth);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void signedReleasesAreTakenAndOthersRefused() throws Exception {
    LegAuth.Signer signer = new LegAuth.Signer(new InternalAuth(KEY), Clock.systemUTC());
    byte[] two = ContextReleaser.body(java.util.List.of(11L, 12L));
    assertEquals(401, post(two, null).statusCode(), "unsigned");
    assertEquals(401, post(two, signer.sign("POST", ContextReleaser.PATH, two, null, null, "ctx-r")).statusCode(),
        "a leg's audience is not a release's");
    String auth = signer.sign("POST", ContextReleaser.PATH, two, null, null, ContextReleaser.AUDIENCE);
    assertEquals(200, post(two, auth).statusCode(), "unknown contexts: a no-op, idempotent");
    assertEquals(401, post(two, auth).statusCode(), "a replay");
    byte[] one = "{\"ctx_request_id\": 7}".getBytes(StandardCharsets.UTF_8);
    assertEquals(200, post(one, signer.sign("POST", ContextReleaser.PATH, one, null, null, ContextReleaser.AUDIENCE))
        .statusCode());
    byte[] bad = "{\"ctx_request_ids\": \"x\"}".getBytes(StandardCharsets.UTF_8);
    HttpResponse<String> refused = post(bad, signer.sign("POST", ContextReleaser.PATH, bad, null, null,
        ContextReleaser.AUDIENCE));
    assertEquals(400, refused.statusCode(), refused.body());
    assertEquals("ctx_request_ids", JSON.readTree(refused.body()).at("/error/param").asText());
    assertEquals(3, worker.releasedContexts());
  }

  @Test
  void theReleaserBatchesWhatComesTogether() throws Exception {
    try (ContextReleaser releaser = new ContextReleaser(new InternalAuth(KEY))) {
      for (long id = 100; id < 150; id++) {
        releaser.release("http://127.0.0.1:" + worker.port(), id);
      }
      WorkerProcess.await(() -> releaser.sent() >= 1 && worker.releasedContexts() == 50, "the releases to land",
          Duration.ofSeconds(20));
      assertTrue(releaser.sent() < 50, "fewer requests than releases: " + releaser.sent());
      releaser.release("ftp://nowhere", 1);  // not a worker's URL: dropped, nothing sent
      assertEquals(0, releaser.failed());
    }
  }
}
