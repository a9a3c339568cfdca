package dev.affinity.disagg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.admission.ClientRequestGuard;
import dev.affinity.admission.PromptTokenizer;
import dev.affinity.admission.RequestAdmission;
import dev.affinity.config.AffinitySettings;
import dev.affinity.config.Location;
import dev.affinity.config.RouterConfig;
import dev.affinity.config.ScheduleStyle;
import dev.affinity.config.SubagentScope;
import dev.affinity.conversation.ConversationResolver;
import dev.affinity.conversation.ConversationSettings;
import dev.affinity.conversation.HeaderSource;
import dev.affinity.disagg.DisaggFakes.RecordingSink;
import dev.affinity.disagg.DisaggFakes.ScriptedWorker;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ChatCompletionStreamResponse;
import dev.affinity.protocol.ChatDelta;
import dev.affinity.protocol.ChatStreamChoice;
import dev.affinity.protocol.CompletionChoice;
import dev.affinity.protocol.CompletionRequest;
import dev.affinity.protocol.CompletionResponse;
import dev.affinity.protocol.CompletionStreamResponse;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.TokenIds;
import dev.affinity.protocol.ToolCall;
import dev.affinity.protocol.UsageInfo;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Router;
import dev.affinity.routing.RouterContext;
import dev.affinity.routing.RouterFactory;
import dev.affinity.timer.Scheduler;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerListener;
import dev.affinity.worker.WorkerReport;
import dev.affinity.worker.WorkerRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.Test;

/**
 * A stream whose generation worker fails mid-way continues on another worker as one stream: the continuation's
 * prompt is the prompt plus the streamed tokens, its chunks carry the stream's id, usage counts one answer; and the
 * cases that cannot continue end with an error event as before.
 */
class StreamResumeTest {
  static final ProtocolCodec CODEC = new ProtocolCodec();
  /** Context worker's prompt ids for every request ({@link DisaggFakes#ctxResponse}). */
  static final int[] CTX_PROMPT = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

  Router ctxRouter;
  Router genRouter;
  DisaggService service;
  RequestAdmission admission;

  private void service(int maxRetries, TextTokenizer tokenizer, PromptTokenizer promptTokenizer, ScriptedWorker ctx,
      ScriptedWorker... gen) {
    ctxRouter = new RouterFactory().create(new RouterConfig("conversation", Location.unknown("t"), Map.of(), Map.of()),
        "context_servers", RouterContext.of(Fleet.CONTEXT));
    genRouter = new RouterFactory().create(new RouterConfig("round_robin", Location.unknown("t"), Map.of(), Map.of()),
        "generation_servers", RouterContext.of(Fleet.GENERATION));
    ctxRouter.addWorker(ctx);
    for (ScriptedWorker g : gen) {
      genRouter.addWorker(g);
    }
    Scheduler never = (task, delay) -> () -> { };
    service = new DisaggService(new DisaggSettings(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, maxRetries,
        Duration.ofSeconds(30), -1), ctxRouter, genRouter, new RequestIds(1, 0, () -> 1_000), never, dev.affinity.tracing.RequestTracer.NONE, tokenizer);
    ConversationResolver resolver = new ConversationResolver(new ConversationSettings(
        AffinitySettings.DEFAULT_SESSION_HEADERS, Optional.empty(), SubagentScope.CONTEXT));
    admission = new RequestAdmission(ClientRequestGuard.strict(), RequestAdmission.ANY_MODEL, resolver, promptTokenizer);
  }

  private RecordingSink send(String json) {
    byte[] body = json.getBytes(StandardCharsets.UTF_8);
    OpenAiRequest r = json.contains("\"messages\"") ? CODEC.parseChatCompletionRequest(body)
        : CODEC.parseCompletionRequest(body);
    RecordingSink sink = new RecordingSink();
    admission.admitAndHandle(r, HeaderSource.of(Map.of()), service, sink);
    return sink;
  }

  private void assertAllReleased() {
    assertEquals(0, ctxRouter.stats().outstandingSelections(), "context selections released");
    assertEquals(0, genRouter.stats().outstandingSelections(), "generation selections released");
    assertEquals(0, ctxRouter.stats().doubleReleases() + genRouter.stats().doubleReleases());
  }

  static CompletionStreamResponse tokens(String id, String text, int[] ids, String finish, UsageInfo usage) {
    return new CompletionStreamResponse(id, "text_completion", 100L, "m",
        List.of(new CompletionChoice(0, text, ids == null ? null : TokenIds.of(ids), null, finish, null, null, Map.of())),
        usage, Map.of());
  }

  static ChatCompletionStreamResponse chat(String id, long created, String role, String content, String finish) {
    return new ChatCompletionStreamResponse(id, "chat.completion.chunk", created, "m",
        List.of(new ChatStreamChoice(0, new ChatDelta(role, content, null, null, null, Map.of()), null, finish, null,
            Map.of())), null, Map.of());
  }

  /** Streams {@code chunks}, then the worker's connection resets. */
  static BiConsumer<WorkerRequest, WorkerListener> cutAfter(OpenAiStreamChunk... chunks) {
    return (r, l) -> {
      for (OpenAiStreamChunk c : chunks) {
        l.onEncodedChunk(dev.affinity.worker.EncodedChunk.of(c));
      }
      l.onError(new WorkerFailure(WorkerFailure.Kind.RESET, 0, "connection reset", true));
    };
  }

  static BiConsumer<WorkerRequest, WorkerListener> streams(OpenAiStreamChunk... chunks) {
    return (r, l) -> {
      for (OpenAiStreamChunk c : chunks) {
        l.onEncodedChunk(dev.affinity.worker.EncodedChunk.of(c));
      }
      l.onComplete(new WorkerReport(0, 0, 10, 100));
    };
  }

  /** A context worker that reports the prompt ids it prefilled: the client's text prompt as CTX_PROMPT. */
  static BiConsumer<WorkerRequest, WorkerListener> context() {
    return (r, l) -> {
      CompletionResponse c = DisaggFakes.ctxResponse(r, "length");
      TokenIds ids = r.body() instanceof CompletionRequest cr && cr.promptTokenIds().isPresent()
          ? cr.promptTokenIds().get() : r.body() instanceof ChatCompletionRequest ch && ch.promptTokenIds() != null
          ? ch.promptTokenIds() : TokenIds.of(CTX_PROMPT);
      l.onEncodedResponse(dev.affinity.worker.EncodedResponse.of(new CompletionResponse(c.id(), c.object(), c.created(), c.model(), c.choices(),
          new UsageInfo(ids.size(), 1, ids.size() + 1, 4), ids, Map.of())));
      l.onComplete(new WorkerReport(1, 4, 10, 100));
    };
  }

  static int[] concat(int[] a, int... b) {
    int[] r = new int[a.length + b.length];
    System.arraycopy(a, 0, r, 0, a.length);
    System.arraycopy(b, 0, r, a.length, b.length);
    return r;
  }

  @Test
  void aCutCompletionStreamContinuesOnAnotherWorkerFromThePromptAndTheStreamedTokens() {
    ScriptedWorker ctx = new ScriptedWorker("ctx0", context());
    ScriptedWorker genA = new ScriptedWorker("genA", cutAfter(
        tokens("cmpl-A", "a", new int[] {101}, null, null), tokens("cmpl-A", "b", new int[] {102}, null, null)));
    ScriptedWorker genB = new ScriptedWorker("genB", streams(
        tokens("cmpl-B", "c", new int[] {103}, null, null), tokens("cmpl-B", "d", new int[] {104}, "length", null),
        tokens("cmpl-B", "", null, null, new UsageInfo(12, 2, 14, 8))));
    service(2, null, PromptTokenizer.NONE, ctx, genA, genB);

    RecordingSink sink = send("{\"model\": \"m\", \"prompt\": \"hello\", \"max_tokens\": 4, \"stream\": true}");

    assertEquals(List.of("start", "chunk", "chunk", "chunk", "chunk", "chunk", "end"), sink.events,
        "one stream, no error event");
    assertEquals(List.of("a", "b", "c", "d", ""), sink.texts());
    sink.chunks.forEach(c -> assertEquals("cmpl-A", c.id(), "every chunk carries the stream's id"));
    assertEquals(1, genA.received.size());
    assertEquals(1, genB.received.size());
    // The continuation: a new context leg over the prompt and the two streamed tokens, two tokens left to generate.
    assertEquals(2, ctx.received.size());
    CompletionRequest continued = (CompletionRequest) ctx.received.get(1).body();
    assertEquals(TokenIds.of(concat(CTX_PROMPT, 101, 102)), continued.promptTokenIds().orElseThrow());
    assertEquals(2, continued.maxTokens());
    assertEquals(TokenIds.of(concat(CTX_PROMPT, 101, 102)),
        ((CompletionRequest) genB.received.get(0).body()).promptTokenIds().orElseThrow(),
        "the generation leg gets the context's prompt ids");
    // Usage is one answer's: the streamed tokens count as output, not prompt.
    UsageInfo usage = sink.chunks.get(4).usage();
    assertEquals(10, usage.promptTokens());
    assertEquals(4, usage.completionTokens());
    assertEquals(14, usage.totalTokens());
    assertEquals(8, usage.cachedTokensOrZero());
    assertEquals(1, sink.route.retries());
    assertEquals("genB", sink.route.genWorker());
    assertAllReleased();
  }

  @Test
  void aCutChatStreamIsTokenizedByTheFrontendAndContinuesWithoutASecondRole() {
    TextTokenizer chars = text -> text.chars().toArray();
    int[] prompt = {7, 7, 7};
    ScriptedWorker ctx = new ScriptedWorker("ctx0", context());
    ScriptedWorker genA = new ScriptedWorker("genA", cutAfter(
        chat("chatcmpl-A", 50, "assistant", "", null), chat("chatcmpl-A", 50, null, "hi", null)));
    ScriptedWorker genB = new ScriptedWorker("genB", streams(
        chat("chatcmpl-B", 60, "assistant", "", null), chat("chatcmpl-B", 60, null, " there", "stop")));
    service(1, chars, r -> prompt, ctx, genA, genB);

    RecordingSink sink = send("{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}],"
        + " \"max_completion_tokens\": 10, \"stream\": true}");

    assertEquals(List.of("start", "chunk", "chunk", "chunk", "end"), sink.events, "the continuation's bare role delta is dropped");
    for (OpenAiStreamChunk c : sink.chunks) {
      ChatCompletionStreamResponse chunk = (ChatCompletionStreamResponse) c;
      assertEquals("chatcmpl-A", chunk.id());
      assertEquals(50L, chunk.created());
    }
    ChatCompletionStreamResponse last = (ChatCompletionStreamResponse) sink.chunks.get(2);
    assertNull(last.choices().get(0).delta().role());
    assertEquals(" there", last.choices().get(0).delta().content());
    ChatCompletionRequest continued = (ChatCompletionRequest) ctx.received.get(1).body();
    assertEquals(TokenIds.of(concat(prompt, 'h', 'i')), continued.promptTokenIds(),
        "the admitted prompt ids and the streamed text as the frontend tokenizes it");
    assertEquals(8, continued.effectiveMaxTokens().orElseThrow());
    assertNull(continued.maxTokens(), "the limit stays in the field the client used");
    assertAllReleased();
  }

  @Test
  void aStreamWhoseFinishReasonArrivedEndsCleanly() {
    ScriptedWorker ctx = new ScriptedWorker("ctx0", context());
    ScriptedWorker genA = new ScriptedWorker("genA", cutAfter(tokens("cmpl-A", "a", null, "stop", null)));
    ScriptedWorker genB = new ScriptedWorker("genB", streams());
    service(2, null, PromptTokenizer.NONE, ctx, genA, genB);

    RecordingSink sink = send("{\"model\": \"m\", \"prompt\": \"hello\", \"max_tokens\": 4, \"stream\": true}");

    assertEquals(List.of("start", "chunk", "end"), sink.events);
    assertEquals(0, genB.received.size());
    assertAllReleased();
  }

  @Test
  void aStreamThatCannotContinueEndsWithAnErrorEvent() {
    ScriptedWorker ctx = new ScriptedWorker("ctx0", context());
    ChatCompletionStreamResponse toolCall = new ChatCompletionStreamResponse("chatcmpl-A", "chat.completion.chunk", 1L,
        "m", List.of(new ChatStreamChoice(0, new ChatDelta("assistant", null, null, null,
            List.of(CODEC.parse(("{\"index\": 0, \"id\": \"call_1\", \"type\": \"function\","
                + " \"function\": {\"name\": \"f\", \"arguments\": \"{\"}}").getBytes(StandardCharsets.UTF_8),
                ToolCall.class)), Map.of()),
            null, null, null, Map.of())), null, Map.of());
    ScriptedWorker genA = new ScriptedWorker("genA", cutAfter(toolCall));
    ScriptedWorker genB = new ScriptedWorker("genB", streams());
    service(2, text -> text.chars().toArray(), r -> new int[] {1}, ctx, genA, genB);

    RecordingSink sink = send("{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}],"
        + " \"stream\": true}");

    assertEquals(List.of("start", "chunk", "fail 502"), sink.events);
    assertTrue(sink.error.error().message().contains("generation worker genA failed mid-stream"));
    assertEquals(0, genB.received.size());
    assertAllReleased();
  }

  @Test
  void aTextStreamWithoutATokenizerIsNotContinued() {
    ScriptedWorker ctx = new ScriptedWorker("ctx0", context());
    ScriptedWorker genA = new ScriptedWorker("genA", cutAfter(tokens("cmpl-A", "a", null, null, null)));
    ScriptedWorker genB = new ScriptedWorker("genB", streams());
    service(2, null, PromptTokenizer.NONE, ctx, genA, genB);

    RecordingSink sink = send("{\"model\": \"m\", \"prompt\": \"hello\", \"max_tokens\": 4, \"stream\": true}");

    assertEquals(List.of("start", "chunk", "fail 502"), sink.events);
    assertEquals(0, genB.received.size());
    assertAllReleased();
  }

  @Test
  void withoutAFrontendTokenizerTheContextWorkerTokenizesTheStreamedText() {
    ScriptedWorker ctx = new ScriptedWorker("ctx0", context());
    CompletableFuture<int[]> answer = new CompletableFuture<>();
    List<String> asked = new java.util.ArrayList<>();
    ctx.tokenizer = text -> {
      asked.add(text);
      return answer;
    };
    ScriptedWorker genA = new ScriptedWorker("genA", cutAfter(tokens("cmpl-A", "ab", null, null, null)));
    ScriptedWorker genB = new ScriptedWorker("genB", streams(tokens("cmpl-B", "c", null, "length", null)));
    service(2, null, PromptTokenizer.NONE, ctx, genA, genB);

    RecordingSink sink = send("{\"model\": \"m\", \"prompt\": \"hello\", \"max_tokens\": 4, \"stream\": true}");
    assertEquals(List.of("ab"), asked, "the worker that served the context tokenizes what the client has");
    assertEquals(List.of("start", "chunk"), sink.events, "the stream waits for the ids");

    answer.complete(new int[] {201, 202});  // the worker's answer, on its own thread in production
    assertEquals(List.of("start", "chunk", "chunk", "end"), sink.events);
    CompletionRequest continued = (CompletionRequest) ctx.received.get(1).body();
    assertEquals(TokenIds.of(concat(CTX_PROMPT, 201, 202)), continued.promptTokenIds().orElseThrow());
    assertEquals(2, continued.maxTokens());
    assertAllReleased();
  }

  @Test
  void aRequestThatEndsWhileTheTextIsTokenizedIsNotContinued() {
    ScriptedWorker ctx = new ScriptedWorker("ctx0", context());
    CompletableFuture<int[]> answer = new CompletableFuture<>();
    ctx.tokenizer = text -> answer;
    ScriptedWorker genA = new ScriptedWorker("genA", cutAfter(tokens("cmpl-A", "ab", null, null, null)));
    ScriptedWorker genB = new ScriptedWorker("genB", streams(tokens("cmpl-B", "c", null, "length", null)));
    service(2, null, PromptTokenizer.NONE, ctx, genA, genB);

    RecordingSink sink = send("{\"model\": \"m\", \"prompt\": \"hello\", \"max_tokens\": 4, \"stream\": true}");
    sink.disconnect.run();  // the client left
    answer.complete(new int[] {201, 202});

    assertEquals(List.of("start", "chunk"), sink.events);
    assertEquals(0, genB.received.size());
    assertEquals(1, ctx.received.size());
    assertAllReleased();
  }

  @Test
  void aWorkerThatCannotTokenizeLeavesTheErrorEvent() {
    ScriptedWorker ctx = new ScriptedWorker("ctx0", context());
    ctx.tokenizer = text -> CompletableFuture.failedFuture(new IllegalStateException("404 from the worker"));
    ScriptedWorker genA = new ScriptedWorker("genA", cutAfter(tokens("cmpl-A", "ab", null, null, null)));
    ScriptedWorker genB = new ScriptedWorker("genB", streams());
    service(2, null, PromptTokenizer.NONE, ctx, genA, genB);

    RecordingSink sink = send("{\"model\": \"m\", \"prompt\": \"hello\", \"max_tokens\": 4, \"stream\": true}");

    assertEquals(List.of("start", "chunk", "fail 502"), sink.events);
    assertTrue(sink.error.error().message().contains("generation worker genA failed mid-stream"));
    assertAllReleased();
  }

  @Test
  void aContinuationThatIsCutAgainContinuesWithEverythingStreamedSoFarUntilTheRetriesRunOut() {
    ScriptedWorker ctx = new ScriptedWorker("ctx0", context());
    ScriptedWorker genA = new ScriptedWorker("genA", cutAfter(tokens("cmpl-A", "a", new int[] {101}, null, null)));
    ScriptedWorker genB = new ScriptedWorker("genB", cutAfter(tokens("cmpl-B", "b", new int[] {102}, null, null)));
    ScriptedWorker genC = new ScriptedWorker("genC", cutAfter(tokens("cmpl-C", "c", new int[] {103}, null, null)));
    service(2, null, PromptTokenizer.NONE, ctx, genA, genB, genC);

    RecordingSink sink = send("{\"model\": \"m\", \"prompt\": \"hello\", \"max_tokens\": 8, \"stream\": true}");

    assertEquals(List.of("start", "chunk", "chunk", "chunk", "fail 502"), sink.events, "two resumes, then the error");
    assertEquals(3, ctx.received.size());
    assertEquals(TokenIds.of(concat(CTX_PROMPT, 101, 102)),
        ((CompletionRequest) ctx.received.get(2).body()).promptTokenIds().orElseThrow(),
        "the second continuation carries both streamed pieces after the original prompt");
    assertEquals(6, ((CompletionRequest) ctx.received.get(2).body()).maxTokens());
    assertEquals(List.of("cmpl-A", "cmpl-A", "cmpl-A"), sink.chunks.stream().map(OpenAiStreamChunk::id).toList());
    assertEquals("genC", sink.route.genWorker());
    assertAllReleased();
  }
}
