package dev.affinity.disagg;

import dev.affinity.frontend.ClientSink;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.kv.HashAlgorithm;
import dev.affinity.protocol.ChatChoice;
import dev.affinity.protocol.ChatCompletionResponse;
import dev.affinity.protocol.ChatMessage;
import dev.affinity.protocol.CompletionChoice;
import dev.affinity.protocol.CompletionResponse;
import dev.affinity.protocol.CompletionStreamResponse;
import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.protocol.TokenIds;
import dev.affinity.protocol.UsageInfo;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerCall;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerInfo;
import dev.affinity.worker.WorkerListener;
import dev.affinity.worker.WorkerReport;
import dev.affinity.worker.WorkerRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiConsumer;

/** Scripted workers and a recording client sink for orchestration tests (no network, no native code). */
final class DisaggFakes {
  private DisaggFakes() {}

  /** A worker whose behaviour per request is a script; records what it received. */
  static final class ScriptedWorker implements Worker {
    final String id;
    final List<WorkerRequest> received = new CopyOnWriteArrayList<>();
    final List<DisaggregatedParams> released = new CopyOnWriteArrayList<>();
    final List<WorkerRequest> cancelled = new CopyOnWriteArrayList<>();
    volatile BiConsumer<WorkerRequest, WorkerListener> script;
    volatile boolean alive = true;
    /** Answers {@link #tokenize} when set (a worker with upstream's {@code /_internal/tokenize}). */
    volatile java.util.function.Function<String, CompletableFuture<int[]>> tokenizer;

    ScriptedWorker(String id, BiConsumer<WorkerRequest, WorkerListener> script) {
      this.id = id;
      this.script = script;
    }

    @Override
    public String id() {
      return id;
    }

    @Override
    public WorkerInfo info() {
      return new WorkerInfo(4, HashAlgorithm.V1_BLOCK_KEY, 2, true, 64);
    }

    @Override
    public boolean isAlive() {
      return alive;
    }

    @Override
    public WorkerCall send(WorkerRequest request, WorkerListener listener) {
      received.add(request);
      boolean[] ended = {false};
      WorkerListener once = new WorkerListener() {
        @Override
        public void onEncodedChunk(dev.affinity.worker.EncodedChunk encodedChunk) {
          OpenAiStreamChunk chunk = encodedChunk.parsed();
          listener.onEncodedChunk(dev.affinity.worker.EncodedChunk.of(chunk));
        }

        @Override
        public void onEncodedResponse(dev.affinity.worker.EncodedResponse encodedResponse) {
          OpenAiResponse response = encodedResponse.parsed();
          listener.onEncodedResponse(dev.affinity.worker.EncodedResponse.of(response));
        }

        @Override
        public void onComplete(WorkerReport report) {
          if (!ended[0]) {
            ended[0] = true;
            listener.onComplete(report);
          }
        }

        @Override
        public void onError(WorkerFailure failure) {
          if (!ended[0]) {
            ended[0] = true;
            listener.onError(failure);
          }
        }
      };
      script.accept(request, once);
      return () -> {
        cancelled.add(request);
        once.onError(new WorkerFailure(WorkerFailure.Kind.CANCELLED, 0, "cancelled", false));
      };
    }

    @Override
    public CompletableFuture<int[]> tokenize(String text) {
      return tokenizer != null ? tokenizer.apply(text) : Worker.super.tokenize(text);
    }

    @Override
    public void releaseContext(DisaggregatedParams contextParams) {
      released.add(contextParams);
    }
  }

  static CompletionResponse ctxResponse(WorkerRequest r, String finish) {
    DisaggregatedParams p = DisaggregatedParams.builder(DisaggRequestType.CONTEXT_ONLY)
        .firstGenTokens(TokenIds.of(42)).ctxRequestId(777L).encodedOpaqueState("b3BhcXVl")
        .disaggRequestId(r.requestId()).ctxDpRank(1).build();
    return new CompletionResponse("cmpl-ctx", "text_completion", 1L, "m",
        List.of(new CompletionChoice(0, "A", null, null, finish, null, p, Map.of())),
        new UsageInfo(10, 1, 11, 4), TokenIds.of(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), Map.of());
  }

  static CompletionResponse genResponse(String text) {
    return new CompletionResponse("cmpl-gen", "text_completion", 2L, "m",
        List.of(new CompletionChoice(0, text, null, null, "length", null, null, Map.of())),
        new UsageInfo(10, 5, 15, 0), null, Map.of());
  }

  static ChatCompletionResponse chatResponse(String text, String finish, DisaggregatedParams p) {
    return new ChatCompletionResponse("chat-1", "chat.completion", 3L, "m",
        List.of(new ChatChoice(0, ChatMessage.of("assistant", text), null, finish, null, p, Map.of())),
        new UsageInfo(10, 1, 11, 0), TokenIds.of(1, 2, 3), null, Map.of());
  }

  static CompletionStreamResponse chunk(String text, String finish) {
    return new CompletionStreamResponse("cmpl-gen", "text_completion", 2L, "m",
        List.of(new CompletionChoice(0, text, null, null, finish, null, null, Map.of())), null, Map.of());
  }

  /** Context worker that answers a context-only leg. */
  static BiConsumer<WorkerRequest, WorkerListener> context(String finish) {
    return (r, l) -> {
      l.onEncodedResponse(dev.affinity.worker.EncodedResponse.of(ctxResponse(r, finish)));
      l.onComplete(new WorkerReport(1, 4, 10, 100));
    };
  }

  /** Generation worker: streams n chunks or answers whole. */
  static BiConsumer<WorkerRequest, WorkerListener> generation(int chunks) {
    return (r, l) -> {
      if (r.streaming()) {
        for (int i = 0; i < chunks; i++) {
          l.onEncodedChunk(dev.affinity.worker.EncodedChunk.of(chunk("t" + i, i == chunks - 1 ? "length" : null)));
        }
      } else {
        l.onEncodedResponse(dev.affinity.worker.EncodedResponse.of(genResponse("generated")));
      }
      l.onComplete(new WorkerReport(0, 0, 10, 100));
    };
  }

  static BiConsumer<WorkerRequest, WorkerListener> failing(WorkerFailure.Kind kind, int status) {
    return (r, l) -> l.onError(new WorkerFailure(kind, status, kind + " from fake", false));
  }

  /** Records what the client would see. */
  static final class RecordingSink implements ClientSink {
    final List<String> events = new CopyOnWriteArrayList<>();
    final List<OpenAiStreamChunk> chunks = new CopyOnWriteArrayList<>();
    volatile OpenAiResponse response;
    volatile int status;
    volatile ErrorResponse error;
    volatile RouteInfo route;
    volatile Runnable disconnect;

    @Override
    public void respondEncoded(dev.affinity.worker.EncodedResponse encodedR, RouteInfo route) {
      OpenAiResponse r = encodedR == null ? null : encodedR.parsed();
      events.add("respond");
      response = r;
      status = 200;
      this.route = route;
    }

    @Override
    public void streamStart(RouteInfo route) {
      events.add("start");
      status = 200;
      this.route = route;
    }

    @Override
    public void streamEncoded(dev.affinity.worker.EncodedChunk encodedChunk) {
      OpenAiStreamChunk chunk = encodedChunk.parsed();
      events.add("chunk");
      chunks.add(chunk);
    }

    @Override
    public void streamEnd(RouteInfo route) {
      events.add("end");
      this.route = route;
    }

    @Override
    public void fail(int status, ErrorResponse error, RouteInfo route) {
      events.add("fail " + status);
      this.status = status;
      this.error = error;
      this.route = route;
    }

    @Override
    public void abort(String reason, RouteInfo route) {
      events.add("abort");
      this.route = route;
    }

    @Override
    public void onDisconnect(Runnable callback) {
      disconnect = callback;
    }

    List<String> texts() {
      List<String> out = new ArrayList<>();
      for (OpenAiStreamChunk c : chunks) {
        if (c instanceof CompletionStreamResponse s) {
          s.choices().forEach(ch -> out.add(ch.text()));
        }
      }
      return out;
    }
  }
}
