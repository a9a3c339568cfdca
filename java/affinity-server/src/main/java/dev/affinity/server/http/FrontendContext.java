package dev.affinity.server.http;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.affinity.admission.ClientRequestGuard;
import dev.affinity.admission.KeptTurns;
import dev.affinity.admission.RequestAdmission;
import dev.affinity.conversation.AffinityRoots;
import dev.affinity.conversation.ConversationResolver;
import dev.affinity.conversation.LocalParentLinks;
import dev.affinity.protocol.ProtocolCodec;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.channel.group.ChannelGroup;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

/** What every connection of one {@link FrontendServer} shares. Thread-safe. */
final class FrontendContext {
  final FrontendOptions options;
  final FrontendBackend backend;
  final PrometheusMeterRegistry registry;
  final ProtocolCodec codec = new ProtocolCodec();
  final FrontendMetrics metrics;
  /** The heap completion requests in flight may hold (a quarter of the heap). */
  final PromptBudget promptBudget = PromptBudget.ofHeap();
  final QueuedWork queued;
  final ApiKeys apiKeys;
  /** The one admission step of every completion request: client rules, model, routing headers, tokens. */
  final RequestAdmission admission;
  final ChannelGroup channels;
  /** The backend's extra routes by path, read once at start. */
  final Map<String, ExtraEndpoint> extraEndpoints;
  final long startedEpochSeconds = System.currentTimeMillis() / 1000;
  private final AtomicLong localIds = new AtomicLong();
  /**
   * Where long prompts are tokenized (admitted) instead of on an event loop: daemon threads, half the processors,
   * created on first use.
   */
  private volatile java.util.concurrent.ExecutorService tokenizing;

  FrontendContext(FrontendOptions options, FrontendBackend backend, PrometheusMeterRegistry registry,
      ChannelGroup channels) {
    this.extraEndpoints = extraEndpoints(backend); // first: a bad route registers nothing
    this.options = options;
    this.backend = backend;
    this.registry = registry;
    this.metrics = new FrontendMetrics(registry);
    this.apiKeys = new ApiKeys(options.apiKeys());
    this.queued = new QueuedWork(backend.queueLimit());
    this.admission = new RequestAdmission(
        new ClientRequestGuard(options.allowClientDisaggregatedParams(), options.allowRequestChatTemplate()),
        this::serves, new ConversationResolver(options.routing(), UUID::randomUUID,
            new AffinityRoots(backend.parentLinks().orElseGet(LocalParentLinks::withDefaults), AffinityRoots.DEFAULT_MAX_DEPTH)),
        backend.tokenizer(), backend.promptLimit(),
        backend.keptTurns().orElseGet(() -> KeptTurns.none(options.routing())));
    this.channels = channels;
  }

  private static Map<String, ExtraEndpoint> extraEndpoints(FrontendBackend backend) {
    Map<String, ExtraEndpoint> extras = backend.extraEndpoints();
    if (extras == null || extras.isEmpty()) {
      return Map.of();
    }
    for (String path : extras.keySet()) {
      if (path == null || !path.startsWith("/")) {
        throw new IllegalArgumentException("an extra endpoint path must start with '/': " + path);
      }
      if (Endpoint.of(path) != null) {
        throw new IllegalArgumentException("an extra endpoint may not replace the built-in " + path);
      }
    }
    return Map.copyOf(extras);
  }

  /** The threads long prompts are admitted on. */
  java.util.concurrent.Executor tokenizing() {
    java.util.concurrent.ExecutorService t = tokenizing;
    if (t == null) {
      synchronized (this) {
        t = tokenizing;
        if (t == null) {
          int threads = Math.max(1, Runtime.getRuntime().availableProcessors() / 2);
          t = tokenizing = java.util.concurrent.Executors.newFixedThreadPool(threads,
              new io.netty.util.concurrent.DefaultThreadFactory("affinity-tokenize", true));
        }
      }
    }
    return t;
  }

  /** Stops the tokenizing threads (tasks queued still run). */
  void close() {
    java.util.concurrent.ExecutorService t = tokenizing;
    if (t != null) {
      t.shutdown();
    }
  }

  /** The frontend's own id for the next request (1, 2, ...; below the orchestration's 2^40 range). */
  long nextLocalId() {
    return localIds.incrementAndGet();
  }

  /** The configured models followed by the backend's, without repeats. */
  List<String> servedModels() {
    Set<String> all = new LinkedHashSet<>(options.models());
    List<String> dynamic = backend.models();
    if (dynamic != null) {
      all.addAll(dynamic);
    }
    return new ArrayList<>(all);
  }

  /** Whether a request may name {@code model}: any model when no model is known at all, or none is checked. */
  boolean serves(String model) {
    if (options.models().contains(model)) {
      return true;
    }
    if (options.models().isEmpty() && !backend.checksModel()) {
      return true;
    }
    List<String> dynamic = backend.models();
    boolean noneKnown = options.models().isEmpty() && (dynamic == null || dynamic.isEmpty());
    return noneKnown || (dynamic != null && dynamic.contains(model));
  }

  /** {@code GET /v1/models}, OpenAI's list shape. */
  record ModelList(@JsonProperty("object") String object, @JsonProperty("data") List<ModelCard> data) {}

  record ModelCard(@JsonProperty("id") String id, @JsonProperty("object") String object,
      @JsonProperty("created") long created, @JsonProperty("owned_by") String ownedBy) {}

  /** {@code GET /version}. */
  record VersionBody(@JsonProperty("version") String version) {}

  /** The list, or null when models come from the workers ({@code checksModel} false) and none is ready. */
  ModelList modelList() {
    List<String> served = servedModels();
    if (served.isEmpty() && options.models().isEmpty() && !backend.checksModel()) {
      return null;
    }
    List<ModelCard> cards = served.stream()
        .map(m -> new ModelCard(m, "model", startedEpochSeconds, "affinity"))
        .toList();
    return new ModelList("list", cards);
  }
}
