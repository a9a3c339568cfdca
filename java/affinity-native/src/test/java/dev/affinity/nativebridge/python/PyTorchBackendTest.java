package dev.affinity.nativebridge.python;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.affinity.executor.ExecutorErrorKind;
import dev.affinity.executor.ExecutorException;
import dev.affinity.executor.ExecutorRequest;
import dev.affinity.executor.ExecutorResponse;
import dev.affinity.executor.FinishReason;
import dev.affinity.executor.IterationStats;
import dev.affinity.executor.KvEvent;
import dev.affinity.executor.KvEventType;
import dev.affinity.executor.RankSource;
import dev.affinity.executor.RequestType;
import dev.affinity.nativebridge.NativeExecutor;
import dev.affinity.kv.HashAlgorithm;
import dev.affinity.nativebridge.worker.BpeTokenCodec;
import dev.affinity.nativebridge.worker.ModelTokenCodec;
import dev.affinity.nativebridge.worker.NativeWorker;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ChatMessage;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The pytorch backend from Java, against the stand-in tensorrt_llm package: what reaches
 * {@code LLM.generate_async}, context phase round trips, cancellation, errors and concurrency. The
 * interpreter starts once per JVM and stays up until the shutdown hook stops it.
 */
class PyTorchBackendTest {
  @TempDir Path dir;

  @BeforeAll
  static void available() {
    StandIn.assumeAvailable();
  }

  private NativeExecutor create(Path record, String options) {
    return NativeExecutor.create(PyTorchBackend.NAME, StandIn.config(record, options).toString());
  }

  private static int[] tokens(int start, int n) {
    int[] t = new int[n];
    for (int i = 0; i < n; i++) {
      t[i] = start + i;
    }
    return t;
  }

  @Test
  void conversationSubagentAndRankHintReachSchedulingAndConversationParams() {
    Path record = dir.resolve("calls.jsonl");
    var cfg = StandIn.config(record, "");
    cfg.putObject("env").put("CUDA_VISIBLE_DEVICES", "3");
    try (NativeExecutor ex = NativeExecutor.create(PyTorchBackend.NAME, cfg.toString())) {
      assertEquals("pytorch", ex.backend());
      assertEquals(2, ex.numRanks());
      assertEquals(4, ex.tokensPerBlock());
      ExecutorRequest sub = ExecutorRequest.builder(tokens(10, 9), 3).clientRequestId(7).streaming(true)
          .conversationId("subagent:child").subagentAffinityId("agent-1").adpRankHint(1, false).cacheSalt("tenant-a")
          .build();
      List<ExecutorResponse> rs = StandIn.until(ex, ex.enqueue(sub), new ArrayList<>());
      ExecutorResponse last = rs.get(rs.size() - 1);
      assertEquals(FinishReason.LENGTH, last.finishReason());
      assertEquals(7, last.clientRequestId());
      assertEquals(3, rs.stream().mapToInt(r -> r.tokens().length).sum());

      ExecutorRequest plain = ExecutorRequest.builder(tokens(10, 9), 2).build();
      StandIn.until(ex, ex.enqueue(plain), new ArrayList<>());

      List<JsonNode> calls = StandIn.calls(record, "generate_async");
      assertEquals(2, calls.size());
      JsonNode c = calls.get(0);
      assertEquals("subagent:child", c.at("/conversation_params/conversation_id").asText());
      assertEquals("agent-1", c.at("/scheduling_params/subagent_affinity_id").asText());
      assertEquals(1, c.at("/scheduling_params/attention_dp_rank").asInt());
      assertFalse(c.at("/scheduling_params/attention_dp_relax").asBoolean());
      assertEquals("tenant-a", c.path("cache_salt").asText());
      assertTrue(c.path("streaming").asBoolean());
      assertEquals(3, c.at("/sampling_params/max_tokens").asInt());
      assertEquals(1, c.path("rank").asInt(), "the stand-in honoured the rank hint");
      // No routing intent: no SchedulingParams, no ConversationParams at all.
      assertTrue(calls.get(1).path("scheduling_params").isNull());
      assertTrue(calls.get(1).path("conversation_params").isNull());
      // The LLM was built with what the backend adds for events and statistics.
      JsonNode init = StandIn.calls(record, "LLM").get(0);
      assertEquals("3", init.path("cuda_visible_devices").asText(), "env is in place while the LLM is built");
      assertEquals(16384, init.at("/kwargs/kv_cache_config/event_buffer_max_size").asInt());
      assertTrue(init.at("/kwargs/enable_iter_perf_stats").asBoolean());
    }
    assertEquals(1, StandIn.calls(record, "shutdown").size(), "close() shuts the LLM down");
  }

  @Test
  void contextPhaseParamsRoundTripFromTheContextLlmToTheGenerationLlm() {
    Path record = dir.resolve("calls.jsonl");
    try (NativeExecutor ctx = create(record, ""); NativeExecutor gen = create(record, "")) {
      ExecutorRequest c = ExecutorRequest.builder(tokens(100, 12), 8).type(RequestType.CONTEXT_ONLY)
          .conversationId("conv-9").build();
      ExecutorResponse cr = last(StandIn.until(ctx, ctx.enqueue(c), new ArrayList<>()));
      assertNotNull(cr.contextPhase(), "a context_only response carries context phase params");
      ExecutorRequest g = ExecutorRequest.builder(tokens(100, 12), 4).type(RequestType.GENERATION_ONLY)
          .contextPhase(cr.contextPhase()).build();
      ExecutorResponse gr = last(StandIn.until(gen, gen.enqueue(g), new ArrayList<>()));
      assertEquals("", gr.errorMessage());
      assertEquals(cr.contextPhase().firstGenTokens()[0], gr.tokens()[0]);

      JsonNode genCall = StandIn.calls(record, "generate_async").get(1);
      assertEquals("generation_only", genCall.at("/disaggregated_params/request_type").asText());
      assertEquals(cr.contextPhase().ctxRequestId(), genCall.at("/disaggregated_params/ctx_request_id").asLong());
      assertEquals(cr.contextPhase().ctxDpRank(), genCall.at("/disaggregated_params/ctx_dp_rank").asInt());
      assertEquals(Base64.getEncoder().encodeToString(cr.contextPhase().opaqueState()),
          genCall.at("/disaggregated_params/opaque_state").asText(), "opaque state arrives byte for byte");
    }
  }

  @Test
  void aRankTheLlmDoesNotReportArrivesWithWhereItCameFrom() {
    Path record = dir.resolve("calls.jsonl");
    var cfg = StandIn.config(record, "&ctx_dp_rank=omit");
    ((com.fasterxml.jackson.databind.node.ObjectNode) cfg.get("kv_events")).put("rank_wait_ms", 20000);
    try (NativeExecutor ex = NativeExecutor.create(PyTorchBackend.NAME, cfg.toString())) {
      ExecutorRequest pinned = ExecutorRequest.builder(tokens(200, 12), 8).type(RequestType.CONTEXT_ONLY)
          .adpRankHint(1, false).build();
      ExecutorResponse p = last(StandIn.until(ex, ex.enqueue(pinned), new ArrayList<>()));
      assertEquals(1, p.metrics().rank());
      assertEquals(RankSource.HINT, p.metrics().rankSource());
      assertEquals(-1, p.contextPhase().ctxDpRank(), "the context phase params say what the LLM said");
      ExecutorRequest free = ExecutorRequest.builder(tokens(300, 12), 8).type(RequestType.CONTEXT_ONLY).build();
      ExecutorResponse f = last(StandIn.until(ex, ex.enqueue(free), new ArrayList<>()));
      List<JsonNode> calls = StandIn.calls(record, "generate_async");
      assertEquals(calls.get(calls.size() - 1).path("rank").asInt(), f.metrics().rank());
      assertEquals(RankSource.KV_EVENTS, f.metrics().rankSource());
      assertEquals(FinishReason.LENGTH, f.finishReason(), "a complete context, not an end id");
    }
  }

  @Test
  void telemetryOfAnUnexpectedShapeIsSkippedAndCounted() throws Exception {
    try (NativeExecutor ex = create(dir.resolve("calls.jsonl"), "&malformed=1")) {
      StandIn.until(ex, ex.enqueue(ExecutorRequest.builder(tokens(400, 8), 2).build()), new ArrayList<>());
      List<KvEvent> events = new ArrayList<>();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while ((events.size() < 2 || ex.iterationStats().rejectedPollItems() < 4) && System.nanoTime() < deadline) {
        events.addAll(ex.drainKvEvents(100));
        Thread.sleep(5);
      }
      assertEquals(4, ex.iterationStats().rejectedPollItems(), "three KV events and one statistics row");
      assertEquals(2, events.size(), "the request's own events still arrive");
    }
  }

  private static ExecutorResponse last(List<ExecutorResponse> rs) {
    return rs.get(rs.size() - 1);
  }

  @Test
  void pythonErrorsArriveAsErrorResponsesWithTheTraceback() {
    try (NativeExecutor ex = create(dir.resolve("calls.jsonl"), "")) {
      ExecutorResponse bad = last(StandIn.until(ex, ex.enqueue(ExecutorRequest.builder(new int[] {1, 999999}, 4).build()),
          new ArrayList<>()));
      assertEquals(FinishReason.ERROR, bad.finishReason());
      assertEquals(ExecutorErrorKind.BACKEND_FAILURE, bad.errorKind());
      assertTrue(bad.errorMessage().contains("Traceback"), bad.errorMessage());
      assertTrue(bad.errorMessage().contains("RuntimeError: stand-in: the prompt asked for an error"), bad.errorMessage());
      ExecutorResponse ok = last(StandIn.until(ex, ex.enqueue(ExecutorRequest.builder(new int[] {1, 2}, 2).build()),
          new ArrayList<>()));
      assertEquals(FinishReason.LENGTH, ok.finishReason());
      assertEquals(ExecutorErrorKind.NONE, ok.errorKind());
      ExecutorResponse empty = last(StandIn.until(ex, ex.enqueue(ExecutorRequest.builder(new int[0], 2).build()),
          new ArrayList<>()));
      assertEquals(ExecutorErrorKind.BAD_REQUEST, empty.errorKind(), empty::toString);
    }
  }

  @Test
  void llmStartFailureNamesThePythonException() {
    ExecutorException e = assertThrows(ExecutorException.class, () -> create(dir.resolve("calls.jsonl"), "&fail=init"));
    assertTrue(e.getMessage().contains("RuntimeError: stand-in LLM refused to start"), e.getMessage());
  }

  @Test
  void theWorkerRoutesWithTheHashAlgorithmOfTheLlmsKvEvents() {
    var cfg = StandIn.config(dir.resolve("calls.jsonl"), "").put("kv_cache_hash_algo", "v2_sha256_64");
    try (NativeExecutor ex = NativeExecutor.create(PyTorchBackend.NAME, cfg.toString());
        NativeWorker w = new NativeWorker("w", ex, new BpeTokenCodec("cl100k_base"), 16)) {
      assertEquals(HashAlgorithm.V2_SHA256_64, w.info().hashAlgorithm());
    }
    ExecutorException e = assertThrows(ExecutorException.class, () -> NativeExecutor.checkConfig("pytorch",
        StandIn.config(dir.resolve("x"), "").put("kv_cache_hash_algo", "md5").toString()));
    assertTrue(e.getMessage().contains("'kv_cache_hash_algo': expected one of v1_block_key, v2_sha256, v2_sha256_64"),
        e.getMessage());
  }

  @Test
  void badConfigurationNamesTheKey() {
    ExecutorException e = assertThrows(ExecutorException.class,
        () -> NativeExecutor.create("pytorch", StandIn.config(dir.resolve("x"), "").put("num_ranks", 3).toString()));
    assertTrue(e.getMessage().contains("'num_ranks': 3 disagrees with llm_args"), e.getMessage());
    e = assertThrows(ExecutorException.class,
        () -> NativeExecutor.create("pytorch", StandIn.config(dir.resolve("x"), "").put("python", "/no/such/python").toString()));
    assertTrue(e.getMessage().contains("'python': cannot run the python interpreter \"/no/such/python\""), e.getMessage());
    e = assertThrows(ExecutorException.class, () -> NativeExecutor.create("pytorch", "{\"model\": 5}"));
    assertTrue(e.getMessage().contains("'model': expected a string"), e.getMessage());
  }

  @Test
  void cancelEndsAStreamingRequestWithOneCancelledResponse() throws Exception {
    Path record = dir.resolve("calls.jsonl");
    try (NativeExecutor ex = create(record, "&delay_ms=20")) {
      long id = ex.enqueue(ExecutorRequest.builder(tokens(1, 8), 1000).streaming(true).build());
      List<ExecutorResponse> seen = new ArrayList<>();
      while (seen.isEmpty()) {
        seen.addAll(ex.awaitResponses(10, Duration.ofMillis(100)));  // it is running
      }
      ex.cancel(id);
      List<ExecutorResponse> rs = StandIn.until(ex, id, new ArrayList<>());
      assertEquals(FinishReason.CANCELLED, last(rs).finishReason());
      assertEquals(1, rs.stream().filter(ExecutorResponse::isFinal).count());
      assertEquals(1, StandIn.calls(record, "abort").size(), "the LLM request was aborted");
    }
  }

  @Test
  void cancelRightAfterEnqueueEndsEveryRequestOnce() {
    try (NativeExecutor ex = create(dir.resolve("calls.jsonl"), "&delay_ms=20")) {
      List<Long> ids = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        long id = ex.enqueue(ExecutorRequest.builder(tokens(i, 6), 1000).build());
        ex.cancel(id); // often drained together with its submit: cancelled before its task starts
        ids.add(id);
      }
      Map<Long, List<ExecutorResponse>> finals = new HashMap<>();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (finals.size() < ids.size() && System.nanoTime() < deadline) {
        for (ExecutorResponse r : ex.awaitResponses(100, Duration.ofMillis(100))) {
          if (r.isFinal()) {
            finals.computeIfAbsent(r.requestId(), k -> new ArrayList<>()).add(r);
          }
        }
      }
      assertEquals(ids.size(), finals.size(), "every cancelled request ended");
      for (List<ExecutorResponse> f : finals.values()) {
        assertEquals(1, f.size());
        assertEquals(FinishReason.CANCELLED, f.get(0).finishReason());
      }
      assertEquals(0, ex.iterationStats().activeRequests());
    }
  }

  @Test
  void manyJavaThreadsEnqueueAtOnceAndEveryRequestEndsOnce() throws Exception {
    try (NativeExecutor ex = create(dir.resolve("calls.jsonl"), "")) {
      int threads = 8;
      int each = 100;
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      CountDownLatch start = new CountDownLatch(1);
      List<Future<?>> fs = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int base = t * each;
        fs.add(pool.submit(() -> {
          start.await();
          for (int i = 0; i < each; i++) {
            ex.enqueue(ExecutorRequest.builder(tokens(base + i, 5), 2).clientRequestId(base + i)
                .conversationId("c" + (base + i) % 13).build());
          }
          return null;
        }));
      }
      start.countDown();
      for (Future<?> f : fs) {
        f.get(30, TimeUnit.SECONDS);
      }
      pool.shutdown();
      Map<Long, Integer> finals = new ConcurrentHashMap<>();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (finals.size() < threads * each && System.nanoTime() < deadline) {
        for (ExecutorResponse r : ex.awaitResponses(1000, Duration.ofMillis(100))) {
          assertEquals("", r.errorMessage());
          if (r.isFinal()) {
            finals.merge(r.clientRequestId(), 1, Integer::sum);
          }
        }
      }
      assertEquals(threads * each, finals.size());
      assertTrue(finals.values().stream().allMatch(n -> n == 1));
    }
  }

  @Test
  void kvEventsAndStatisticsComeFromTheLlm() throws Exception {
    // delay_ms: the request outlasts several polls; its events must arrive without a next request
    try (NativeExecutor ex = create(dir.resolve("calls.jsonl"), "&delay_ms=20")) {
      ExecutorRequest r = ExecutorRequest.builder(tokens(500, 16), 2).adpRankHint(0, false).build();
      StandIn.until(ex, ex.enqueue(r), new ArrayList<>());
      List<KvEvent> events = new ArrayList<>();
      IterationStats st = ex.iterationStats();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while ((events.size() < 4 || st.iterations() == 0) && System.nanoTime() < deadline) {
        events.addAll(ex.drainKvEvents(100));
        st = ex.iterationStats();
        Thread.sleep(10);
      }
      ExecutorResponse second = last(StandIn.until(ex, ex.enqueue(r), new ArrayList<>()));
      assertEquals(16, second.metrics().reusedTokens(), "cached_tokens of the LLM's output");
      assertEquals(4, events.size());
      assertEquals(KvEventType.STORED, events.get(0).type());
      assertEquals(0, events.get(0).rank());
      assertEquals(events.get(0).blockHashes()[0], events.get(1).parentHash());
      assertTrue(st.iterations() > 0);
      assertEquals(1000, ex.kvCacheStats(0).maxNumBlocks());
      assertTrue(ex.describe().contains("0.0.0+affinity.standin"), ex.describe());
      try (NativeWorker w = new NativeWorker("w", ex, new BpeTokenCodec("cl100k_base"), 16)) {
        assertEquals(HashAlgorithm.V1_BLOCK_KEY, w.info().hashAlgorithm());
        assertEquals(2, w.info().numRanks());
      }
    }
  }

  @Test
  void theModelTokenizerAndChatTemplateComeFromTheLlm() {
    try (NativeExecutor ex = create(dir.resolve("calls.jsonl"), "")) {
      assertTrue(ex.hasModelTokenizer());
      assertArrayEquals(new int[] {1, 'h', 'i'}, ex.tokenize("hi"));
      assertEquals(1 + 300, ex.tokenize("\u00e9".repeat(300)).length, "one id per character of a multi-byte text");
      ModelTokenCodec codec = new ModelTokenCodec(ex);
      ChatCompletionRequest chat = ChatCompletionRequest.builder("m", List.of(ChatMessage.of("user", "hi"))).build();
      int[] ids = codec.encodeChat(chat);
      assertEquals("<|user|>hi\n<|assistant|>", new String(ids, 1, ids.length - 1));
      assertEquals("ok", codec.decode(new int[] {1, 'o', 'k'}), "special tokens skipped");
    }
    // More ids than the text has bytes: the first buffer is too small and the call is repeated.
    try (NativeExecutor ex = create(dir.resolve("calls.jsonl"), "&token_repeat=3")) {
      assertEquals(1 + 3 * 500, ex.tokenize("a".repeat(500)).length);
    }
    try (NativeExecutor sim = NativeExecutor.create("sim", "{}")) {
      assertFalse(sim.hasModelTokenizer());
      assertThrows(UnsupportedOperationException.class, () -> sim.tokenize("x"));
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new ModelTokenCodec(sim));
      assertTrue(e.getMessage().contains("needs workers that run a model (backend pytorch)"), e.getMessage());
    }
  }
}
