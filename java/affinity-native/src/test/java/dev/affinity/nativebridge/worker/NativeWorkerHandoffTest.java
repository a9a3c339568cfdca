package dev.affinity.nativebridge.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.executor.ExecutorErrorKind;
import dev.affinity.executor.ExecutorResponse;
import dev.affinity.executor.FinishReason;
import dev.affinity.executor.RequestMetrics;
import dev.affinity.nativebridge.HandoffDomain;
import dev.affinity.nativebridge.NativeExecutor;
import dev.affinity.protocol.CompletionResponse;
import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerListener;
import dev.affinity.worker.WorkerReport;
import dev.affinity.worker.WorkerRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * In-process workers and their fleet's hand-off domain: executor errors become worker failures by
 * their kind, and two fleets in one JVM never take over each other's contexts, neither a held KV
 * (context first) nor a published context (generation first).
 */
class NativeWorkerHandoffTest {
  static final ProtocolCodec CODEC = new ProtocolCodec();
  static final BpeTokenCodec BPE = new BpeTokenCodec("cl100k_base");
  /** 1000x faster than modelled time; contexts held a day of executor time (no hold expires in a test). */
  static final String EXEC = """
      {"num_ranks": 1, "tokens_per_block": 16, "clock": {"mode": "real", "time_scale": 0.001},
       "context_hold_timeout_ms": 86400000}""";
  static final String PROMPT = "The quick brown fox jumps over the lazy dog";

  private final List<AutoCloseable> open = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
  }

  private HandoffDomain fleet() {
    HandoffDomain d = new HandoffDomain();
    open.add(d);
    return d;
  }

  private NativeWorker worker(String id, HandoffDomain fleet) {
    NativeWorker w = new NativeWorker(id, NativeExecutor.create("sim", EXEC, fleet), BPE, 16, fleet);
    open.add(w);
    return w;
  }

  /** Records the one end of a call. */
  static final class Outcome implements WorkerListener {
    final CompletableFuture<Object> end = new CompletableFuture<>();
    volatile OpenAiResponse response;

    @Override
    public void onEncodedResponse(dev.affinity.worker.EncodedResponse encodedR) {
      OpenAiResponse r = encodedR.parsed();
      response = r;
    }

    @Override
    public void onComplete(WorkerReport report) {
      end.complete(report);
    }

    @Override
    public void onError(WorkerFailure failure) {
      end.complete(failure);
    }

    /** The end of the call (a bound for a broken build, not a timing assertion). */
    Object await() throws Exception {
      return end.get(30, TimeUnit.SECONDS);
    }

    WorkerFailure failure() throws Exception {
      return assertInstanceOf(WorkerFailure.class, await());
    }
  }

  private static Outcome send(NativeWorker w, long requestId, String json) {
    OpenAiRequest body = CODEC.parseCompletionRequest(json.getBytes(StandardCharsets.UTF_8));
    Outcome o = new Outcome();
    w.send(new WorkerRequest(requestId, body, null, -1, Duration.ofSeconds(30)), o);
    return o;
  }

  private static Outcome sendChat(NativeWorker w, long requestId, String json) {
    OpenAiRequest body = CODEC.parseChatCompletionRequest(json.getBytes(StandardCharsets.UTF_8));
    Outcome o = new Outcome();
    w.send(new WorkerRequest(requestId, body, null, -1, Duration.ofSeconds(30)), o);
    return o;
  }

  private static String leg(String disaggregatedParams) {
    return "{\"model\": \"m\", \"prompt\": \"" + PROMPT + "\", \"max_tokens\": 3"
        + (disaggregatedParams == null ? "" : ", \"disaggregated_params\": " + disaggregatedParams) + "}";
  }

  private static String generationLeg(DisaggregatedParams ctx) {
    DisaggregatedParams p = ctx.toBuilder().requestType(DisaggRequestType.GENERATION_ONLY).build();
    return leg(CODEC.toJsonString(p));
  }

  @Test
  void executorErrorsBecomeWorkerFailuresByTheirKind() {
    for (ExecutorErrorKind kind : ExecutorErrorKind.values()) {
      ExecutorResponse r = new ExecutorResponse(1, 1, new int[0], FinishReason.ERROR, true, "a message that says context",
          kind, null, new RequestMetrics(0, 0, 0, 0, 0, 0, 0, 0, 0));
      WorkerFailure f = NativeCall.failureOf("w", r, false);
      boolean clientsFault = kind == ExecutorErrorKind.BAD_REQUEST || kind == ExecutorErrorKind.CAPACITY;
      assertEquals(clientsFault ? WorkerFailure.Kind.CLIENT_ERROR : WorkerFailure.Kind.WORKER_ERROR, f.kind(), kind::name);
      assertEquals(clientsFault ? 400 : 502, f.status(), kind::name);
      assertEquals("worker w: a message that says context", f.message());
    }
  }

  @Test
  void aCacheSaltPartitionsTheExecutorsCache() throws Exception {
    NativeWorker w = worker("w", fleet());
    String text = (PROMPT + ". ").repeat(8);
    java.util.function.Function<String, String> chat = salt -> "{\"model\": \"m\", \"max_tokens\": 1, \"messages\": "
        + "[{\"role\": \"user\", \"content\": \"" + text + "\"}]" + (salt == null ? "" : ", \"cache_salt\": \"" + salt + "\"") + "}";
    WorkerReport first = (WorkerReport) sendChat(w, 1, chat.apply("tenant-a")).await();
    assertEquals(0, first.reusedTokens());
    WorkerReport otherSalt = (WorkerReport) sendChat(w, 2, chat.apply("tenant-b")).await();
    assertEquals(0, otherSalt.reusedTokens(), "same tokens, another salt: no block shared");
    WorkerReport noSalt = (WorkerReport) sendChat(w, 3, chat.apply(null)).await();
    assertEquals(0, noSalt.reusedTokens(), "no salt shares nothing with a salted prompt");
    WorkerReport sameSalt = (WorkerReport) sendChat(w, 4, chat.apply("tenant-a")).await();
    assertTrue(sameSalt.reusedTokens() >= 16, "the same salt reuses its blocks: " + sameSalt.reusedTokens());
  }

  @Test
  void moreChoicesOrLogprobsAreRefusedNotDropped() throws Exception {
    NativeWorker w = worker("w", fleet());
    String[][] cases = {{"\"n\": 2", "n:"}, {"\"logprobs\": 1", "logprobs:"}};
    for (String[] c : cases) {
      WorkerFailure f = send(w, 1, "{\"model\": \"m\", \"prompt\": \"hi\", \"max_tokens\": 2, " + c[0] + "}").failure();
      assertEquals(WorkerFailure.Kind.CLIENT_ERROR, f.kind(), f::toString);
      assertEquals(400, f.status());
      assertTrue(f.message().startsWith(c[1]), f.message());
    }
    assertInstanceOf(WorkerReport.class,
        send(w, 2, "{\"model\": \"m\", \"prompt\": \"hi\", \"max_tokens\": 2, \"n\": 1}").await());
    assertEquals(1, w.executor().iterationStats().completedRequests(), "only the plain request ran");
  }

  @Test
  void aBadRequestIsAClientErrorAndAContextOfAnotherFleetAWorkerError() throws Exception {
    HandoffDomain fleetA = fleet();
    HandoffDomain fleetB = fleet();
    NativeWorker ctxA = worker("ctx-a", fleetA);
    NativeWorker genA = worker("gen-a", fleetA);
    NativeWorker genB = worker("gen-b", fleetB);

    WorkerFailure empty = send(genA, 1, "{\"model\": \"m\", \"prompt\": \"\", \"max_tokens\": 3}").failure();
    assertEquals(WorkerFailure.Kind.CLIENT_ERROR, empty.kind(), empty::toString);
    assertEquals(400, empty.status());
    assertTrue(empty.message().contains("input_token_ids is empty"), empty.message());

    Outcome ctx = send(ctxA, 2, leg("{\"request_type\": \"context_only\", \"disagg_request_id\": 2}"));
    assertInstanceOf(WorkerReport.class, ctx.await());
    DisaggregatedParams params = ctx.response.firstDisaggregatedParams().orElseThrow();
    WorkerFailure foreign = send(genB, 3, generationLeg(params)).failure();
    assertEquals(WorkerFailure.Kind.WORKER_ERROR, foreign.kind(), foreign::toString);
    assertEquals(502, foreign.status());
    assertTrue(foreign.message().contains("outside this executor's hand-off domain"), foreign.message());
    assertEquals(1, ctxA.executor().iterationStats().heldContexts(), "fleet B left fleet A's context alone");

    Outcome own = send(genA, 4, generationLeg(params));
    assertInstanceOf(WorkerReport.class, own.await());
    assertEquals(3, ((CompletionResponse) own.response).usage().completionTokens());
    assertEquals(0, ctxA.executor().iterationStats().heldContexts(), "fleet A's generation worker pulled it");
  }

  /**
   * A context leg the executor answers while its call is still being submitted keeps its KV held
   * (a call once let go of such a context as if it had been cancelled during submission). Each
   * round has the same answer; the race the rounds exercise only decides whether the bug shows.
   */
  @Test
  void aContextAnsweredDuringSubmissionStaysHeld() throws Exception {
    HandoffDomain fleetA = fleet();
    NativeWorker ctxA = worker("ctx-a", fleetA);
    for (int i = 1; i <= 200; i++) {
      Outcome ctx = send(ctxA, i, leg("{\"request_type\": \"context_only\", \"disagg_request_id\": " + i + "}"));
      assertInstanceOf(WorkerReport.class, ctx.await());
      assertEquals(i, ctxA.executor().iterationStats().heldContexts(), "round " + i);
    }
  }

  @Test
  void aGenerationFirstLegWaitsForAContextOfItsOwnFleetOnly() throws Exception {
    HandoffDomain fleetA = fleet();
    HandoffDomain fleetB = fleet();
    NativeWorker ctxA = worker("ctx-a", fleetA);
    NativeWorker genA = worker("gen-a", fleetA);
    NativeWorker ctxB = worker("ctx-b", fleetB);
    String contextLeg = leg("{\"request_type\": \"context_only\", \"disagg_request_id\": 42, \"schedule_style\": 1}");

    Outcome generation = send(genA, 42, leg("{\"request_type\": \"generation_only\", \"disagg_request_id\": 42}"));
    // Fleet B runs a context leg with the same request id (two services in one JVM number alike).
    assertInstanceOf(WorkerReport.class, send(ctxB, 42, contextLeg).await());
    assertFalse(generation.end.isDone(), "fleet B's context did not reach fleet A's waiting generation leg");
    assertEquals(0, genA.executor().iterationStats().completedRequests() + genA.executor().iterationStats().activeRequests(),
        "nothing was started on fleet A's generation worker");
    assertEquals(1, ctxB.executor().iterationStats().heldContexts(), "fleet B's context is still held");

    assertInstanceOf(WorkerReport.class, send(ctxA, 42, contextLeg).await());
    assertInstanceOf(WorkerReport.class, generation.await(), "fleet A's own context starts it");
    assertEquals(0, ctxA.executor().iterationStats().heldContexts(), "and it pulled that context");
  }

  @Test
  void aWorkerWithoutADomainAnswersALegThatWouldWaitForItsContextWithAWorkerError() throws Exception {
    NativeWorker loner = new NativeWorker("loner", NativeExecutor.create("sim", EXEC), BPE, 16);
    open.add(loner);
    WorkerFailure f = send(loner, 7, leg("{\"request_type\": \"generation_only\", \"disagg_request_id\": 7}")).failure();
    assertEquals(WorkerFailure.Kind.WORKER_ERROR, f.kind(), f::toString);
    assertTrue(f.message().contains("no hand-off domain"), f.message());
    assertInstanceOf(WorkerReport.class, send(loner, 8, leg(null)).await(), "aggregated requests are served");
  }

  @Test
  void theWorkerInfoCarriesTheExecutorsBatchLimits() {
    NativeWorker w = new NativeWorker("limits", NativeExecutor.create("sim",
        "{\"num_ranks\": 2, \"tokens_per_block\": 16, \"max_batch_size\": 8, \"max_num_tokens\": 1024}"), BPE, 16);
    open.add(w);
    assertEquals(8, w.info().maxBatchSize());
    assertEquals(1024, w.info().maxNumTokens(), "the lockstep bound of Affinity's router reads it");
    assertEquals(2, w.info().numRanks());
  }
}
