package dev.affinity.server.workermode;

import static dev.affinity.server.workermode.WorkerServerTest.CODEC;
import static dev.affinity.server.workermode.WorkerServerTest.CONFIG;
import static dev.affinity.server.workermode.WorkerServerTest.LONG;
import static dev.affinity.server.workermode.WorkerServerTest.PROMPT;
import static dev.affinity.server.workermode.WorkerServerTest.generationLeg;
import static dev.affinity.server.workermode.WorkerServerTest.post;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.executor.KvEvent;
import dev.affinity.nativebridge.HandoffDomain;
import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.InternalAuth;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.server.worker.HttpWorker;
import dev.affinity.server.worker.HttpWorkerSettings;
import dev.affinity.server.worker.LegAuth;
import dev.affinity.server.worker.RecordingListener;
import dev.affinity.server.worker.WorkerExtensions;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Worker mode with a key authenticates every request from a frontend ({@link LegAuth#HEADER}): context-only,
 * generation-only and aggregated legs and the rank hint, before body validation and the model check, and
 * {@code /kv_cache_events}; a signed request cannot be altered or replayed. The frontend's {@link HttpWorker}
 * signs what it sends; a worker without a key keeps accepting unsigned requests.
 */
class WorkerLegAuthTest {
  private static final String KEY = "leg-auth-key";
  private static final InternalAuth AUTH = new InternalAuth(KEY);
  /** The keyed workers' clock in the raw-request tests: timestamps relative to it are deterministic. */
  private static final long NOW = 1_764_600_000_000L;
  private static final Clock FIXED = Clock.fixed(Instant.ofEpochMilli(NOW), ZoneOffset.UTC);

  private final HandoffDomain handoff = new HandoffDomain();
  private final List<AutoCloseable> open = new ArrayList<>();
  private final List<RecordingListener> listeners = new ArrayList<>();
  private long nextId = (1L << 40) + 5000;
  private int nonces;

  @AfterEach
  void close() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
    handoff.close();
    listeners.forEach(RecordingListener::assertContract);
  }

  private WorkerServer worker(String name, String key, String model, Clock clock) throws Exception {
    WorkerServer w = WorkerServer.start(CONFIG, WorkerSettings.defaults().withName(name).withAuthKey(key).withModel(model),
        FrontendOptions.defaults().withAccessLog(AccessLog.none()), "test", handoff, clock);
    open.add(w);
    return w;
  }

  private HttpWorker client(WorkerServer w, String key) throws Exception {
    HttpWorker h = HttpWorker.connect(HttpWorkerSettings.of("127.0.0.1:" + w.port()).withAuthKey(key), CODEC);
    open.add(h);
    return h;
  }

  private RecordingListener send(HttpWorker h, OpenAiRequest body, int rankHint) {
    RecordingListener l = new RecordingListener();
    listeners.add(l);
    h.send(new WorkerRequest(body.disaggregatedParams() == null ? 1 : body.disaggregatedParams().disaggRequestId(),
        body, null, rankHint, LONG), l);
    return l;
  }

  private String contextLegJson(String conversation) {
    return """
        {"model":"m","prompt":%s,"max_tokens":4,"conversation_params":{"conversation_id":"%s"},\
        "disaggregated_params":{"request_type":"context_only","disagg_request_id":%d}}"""
        .formatted(PROMPT, conversation, nextId++);
  }

  private OpenAiRequest contextLeg(String conversation) {
    return CODEC.parseCompletionRequest(contextLegJson(conversation).getBytes(StandardCharsets.UTF_8));
  }

  /** The header a frontend would send to worker {@code worker} for this body, signed at {@code ts}. */
  private String signed(String path, String body, String rankHint, String worker, long ts) {
    return LegAuth.headerValue(AUTH, new LegAuth.Claim("POST", path, LegAuth.sha256(body.getBytes(StandardCharsets.UTF_8)),
        rankHint, null, worker, ts, "test-nonce-" + (nonces++)));
  }

  private static String errorType(HttpResponse<String> r) {
    return CODEC.readTree(r.body().getBytes(StandardCharsets.UTF_8)).at("/error/type").asText();
  }

  // ---- refused before anything else ----

  @Test
  void anUnsignedLegIsRefusedWith401BeforeBodyValidationAndTheModelCheck() throws Exception {
    WorkerServer w = worker("ctx-a", KEY, "m", FIXED);
    HttpResponse<String> context = post(w, "/v1/completions", contextLegJson("c"));
    assertEquals(401, context.statusCode(), context.body());
    assertEquals("authentication_error", errorType(context));
    assertTrue(context.body().contains(LegAuth.HEADER), context.body());
    HttpResponse<String> aggregated = post(w, "/v1/chat/completions",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2}");
    assertEquals(401, aggregated.statusCode(), "aggregated legs too: " + aggregated.body());
    assertEquals(401, post(w, "/v1/completions", "{").statusCode(), "a malformed body: 401, not 400");
    assertEquals(401, post(w, "/v1/completions", "{\"model\":\"other\",\"prompt\":\"hi\"}").statusCode(),
        "an unknown model: 401, not 404");
    assertEquals(401, post(w, "/v1/completions", "{\"model\":\"m\",\"prompt\":\"hi\",\"temperature\":\"hot\"}")
        .statusCode(), "an invalid field: 401, not 400");
    String body = "{";
    assertEquals(400, post(w, "/v1/completions", body, LegAuth.HEADER, signed("/v1/completions", body, null, "ctx-a", NOW))
        .statusCode(), "signed, the same malformed body gets the frontend's 400");
    String otherModel = "{\"model\":\"other\",\"prompt\":\"hi\"}";
    assertEquals(404, post(w, "/v1/completions", otherModel, LegAuth.HEADER,
        signed("/v1/completions", otherModel, null, "ctx-a", NOW)).statusCode(), "and the unknown model its 404");
  }

  @Test
  void aTamperedRankHintOrPromptIsRefused() throws Exception {
    WorkerServer w = worker("ctx-a", KEY, null, FIXED);
    String body = contextLegJson("c");
    HttpResponse<String> hint = post(w, "/v1/completions", body, LegAuth.HEADER,
        signed("/v1/completions", body, "0", "ctx-a", NOW), WorkerExtensions.RANK_HINT_HEADER, "1");
    assertEquals(401, hint.statusCode(), "rank hint 0 signed, 1 sent: " + hint.body());
    String prompt = body.replace("[1,2,3,", "[9,2,3,");
    assertFalse(prompt.equals(body));
    HttpResponse<String> tampered = post(w, "/v1/completions", prompt, LegAuth.HEADER,
        signed("/v1/completions", body, "0", "ctx-a", NOW), WorkerExtensions.RANK_HINT_HEADER, "0");
    assertEquals(401, tampered.statusCode(), "prompt altered: " + tampered.body());
    HttpResponse<String> otherWorker = post(w, "/v1/completions", body, LegAuth.HEADER,
        signed("/v1/completions", body, "0", "gen-b", NOW), WorkerExtensions.RANK_HINT_HEADER, "0");
    assertEquals(401, otherWorker.statusCode(), "signed for another worker: " + otherWorker.body());
    HttpResponse<String> ok = post(w, "/v1/completions", body, LegAuth.HEADER,
        signed("/v1/completions", body, "0", "ctx-a", NOW), WorkerExtensions.RANK_HINT_HEADER, "0");
    assertEquals(200, ok.statusCode(), "unaltered: served: " + ok.body());
    assertEquals(0, CODEC.readTree(ok.body().getBytes(StandardCharsets.UTF_8))
        .at("/choices/0/disaggregated_params/ctx_dp_rank").asInt(), "on the signed rank");
  }

  @Test
  void aReplayedOrStaleLegIsRefused() throws Exception {
    WorkerServer w = worker("ctx-a", KEY, null, FIXED);
    String body = contextLegJson("c");
    String header = signed("/v1/completions", body, null, "ctx-a", NOW);
    assertEquals(200, post(w, "/v1/completions", body, LegAuth.HEADER, header).statusCode());
    HttpResponse<String> replay = post(w, "/v1/completions", body, LegAuth.HEADER, header);
    assertEquals(401, replay.statusCode(), replay.body());
    assertTrue(replay.body().contains("replayed"), replay.body());
    String stale = contextLegJson("c");
    HttpResponse<String> old = post(w, "/v1/completions", stale, LegAuth.HEADER,
        signed("/v1/completions", stale, null, "ctx-a", NOW - LegAuth.DEFAULT_WINDOW.toMillis() - 1));
    assertEquals(401, old.statusCode(), old.body());
    assertTrue(old.body().contains("timestamp"), old.body());
    assertEquals(200, post(w, "/v1/completions", stale, LegAuth.HEADER,
        signed("/v1/completions", stale, null, "ctx-a", NOW - LegAuth.DEFAULT_WINDOW.toMillis())).statusCode(),
        "at the window's edge: served");
  }

  @Test
  void kvCacheEventsNeedTheCredential() throws Exception {
    WorkerServer w = worker("ctx-a", KEY, null, FIXED);
    HttpResponse<String> unsigned = post(w, "/kv_cache_events", "");
    assertEquals(401, unsigned.statusCode(), unsigned.body());
    HttpResponse<String> wrong = post(w, "/kv_cache_events", "", LegAuth.HEADER,
        LegAuth.headerValue(new InternalAuth("another-key"), new LegAuth.Claim("POST", "/kv_cache_events",
            LegAuth.sha256(new byte[0]), null, null, "ctx-a", NOW, "test-nonce-wrong-key")));
    assertEquals(401, wrong.statusCode(), wrong.body());
    HttpResponse<String> ok = post(w, "/kv_cache_events", "", LegAuth.HEADER, signed("/kv_cache_events", "", null,
        "ctx-a", NOW));
    assertEquals(200, ok.statusCode(), ok.body());
    assertTrue(ok.body().contains("\"created\""), "the events, drained by the signed poll: " + ok.body());
    HttpResponse<String> replayed = post(w, "/kv_cache_events", "", LegAuth.HEADER,
        ok.request().headers().firstValue(LegAuth.HEADER).orElseThrow());
    assertEquals(401, replayed.statusCode(), "a captured poll cannot be replayed: " + replayed.body());
  }

  // ---- the frontend's client signs ----

  @Test
  void theFrontendsClientSignsEveryLegAndItsEventPolls() throws Exception {
    WorkerServer ctxServer = worker("ctx-a", KEY, null, Clock.systemUTC());
    WorkerServer genServer = worker("gen-a", KEY, null, Clock.systemUTC());
    HttpWorker ctx = client(ctxServer, KEY);
    HttpWorker gen = client(genServer, KEY);
    RecordingListener c = send(ctx, contextLeg("conv-1"), 1);
    assertEquals(1, c.awaitReport().rank(), "context leg with its rank hint");
    OpenAiRequest genBody = generationLeg(contextLeg("conv-1").withDisaggregatedParams(null), c.response());
    send(gen, genBody, 0).awaitReport();
    OpenAiRequest aggregated = contextLeg("conv-2").withDisaggregatedParams(
        DisaggregatedParams.builder(DisaggRequestType.CONTEXT_AND_GENERATION).disaggRequestId(nextId++).build());
    send(gen, aggregated, -1).awaitReport();
    List<KvEvent> events = new CopyOnWriteArrayList<>();
    ctx.onKvEvents(events::addAll);
    assertTrue(ctx.pollKvEvents().get(10, TimeUnit.SECONDS) > 0, "the signed poll drains the events");

    HttpWorker wrongKey = client(ctxServer, "another-key");
    HttpWorker noKey = client(ctxServer, null);
    for (HttpWorker h : List.of(wrongKey, noKey)) {
      WorkerFailure f = send(h, contextLeg("conv-3"), -1).awaitFailure();
      assertEquals(401, f.status(), f.toString());
      assertFalse(f.retryable());
      List<KvEvent> stolen = new CopyOnWriteArrayList<>();
      h.onKvEvents(stolen::addAll);
      assertEquals(0, h.pollKvEvents().get(10, TimeUnit.SECONDS), "no events without the key");
    }
  }

  @Test
  void aWorkerWithoutAKeyAcceptsUnsignedRequests() throws Exception {
    WorkerServer w = worker("ctx-a", null, null, FIXED);
    HttpResponse<String> r = post(w, "/v1/completions", contextLegJson("c"), WorkerExtensions.RANK_HINT_HEADER, "1");
    assertEquals(200, r.statusCode(), r.body());
    assertEquals(400, post(w, "/v1/completions", "{").statusCode(), "the frontend's own checks as before");
    assertEquals(200, post(w, "/kv_cache_events", "").statusCode());
    RecordingListener l = send(client(w, null), contextLeg("c"), 0);
    assertEquals(0, l.awaitReport().rank());
  }
}
