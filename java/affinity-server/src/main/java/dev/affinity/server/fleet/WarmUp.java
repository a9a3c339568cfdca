package dev.affinity.server.fleet;

import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.config.RouterConfig;
import dev.affinity.config.ServerSection;
import dev.affinity.nativebridge.HandoffDomain;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.server.workermode.WorkerServer;
import dev.affinity.server.workermode.WorkerSettings;
import io.netty.channel.EventLoopGroup;
import java.io.IOException;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.yaml.snakeyaml.DumperOptions;
import org.yaml.snakeyaml.Yaml;

/**
 * Runs the request path hot before the frontend listens, so that a restarted frontend does not spend its first
 * thousands of requests in the interpreter and the JIT (issue 29: a cold frontend paid 10x the warm CPU per request
 * over its first 10,000 requests). A throw-away copy of the configured path (the same routers, schedule, sub-agent
 * header, tokenizer, and HTTP legs to loopback worker servers wherever the real fleet is remote, embedded executors
 * wherever it is embedded, all with a zero-cost timing model) serves {@code affinity.warm_up_requests} requests from
 * {@link WarmUpClient}, which sends them in the header sets, write patterns and connection lifetimes of common clients
 * (some of them giving up before the answer): a mix of chats and completions, streamed and whole, new and repeated
 * prompts, with session and sub-agent headers. The requests go in batches, each followed by a pause until the JIT has
 * compiled what the batch made hot. Then everything of the copy is closed but the event loops it was given
 * ({@link #run(DisaggConfig, EventLoopGroup)}: {@code serve}'s, which the frontend then runs on). The JIT's compiled
 * code and the JVM's grown heap stay. Nothing of the real fleet is touched: its routers, caches, sessions and metrics
 * start empty.
 *
 * <p>The launchers run the JVM with {@code -XX:Tier4LoadFeedback=1000} (docs/native.md): by default C2 raises its
 * compile thresholds with the length of its queue, which a warm-up on a few cores keeps long, so that much of the hot
 * path was still compiled with profiling (tier 3) when the warm-up ended and was compiled by C2 only during the real
 * frontend's first requests (measured: 0.8 s of compilation in its first 10,000 requests, against 0.2 s with the flag).
 */
public final class WarmUp {
  private static final Logger log = LoggerFactory.getLogger(WarmUp.class);
  private static final int CONCURRENCY = 16;
  private static final int ROUNDS = 2;
  /** Requests between two pauses for the JIT. */
  private static final int BATCH = 1000;
  /** A pause for the JIT ends once it has compiled less than {@link #QUIET_JIT_MS} ms over this long. */
  private static final int QUIET_MS = 250;
  private static final int QUIET_JIT_MS = 5;
  private static final int MAX_DRAIN_S = 30;
  /**
   * The warm-up ends after this long even when requests are left (a machine too busy to compile): the frontend must
   * bind its port within the startup probe's 2 minutes (deploy/kubernetes).
   */
  private static final int MAX_SECONDS = 90;
  /** Every timing term of the CPU executor at zero: the legs cost only the code they run. */
  static final Map<String, Object> ZERO_TIMING = Map.of("iteration_overhead_us", 0, "prefill_us_per_token", 0,
      "prefill_us_per_token_sq", 0, "decode_base_us", 0, "decode_us_per_seq", 0, "decode_us_per_kv_token", 0,
      "transfer_latency_us", 0);

  /**
   * What a warm-up did: requests answered, failed, and abandoned (sent by a client that closed before the answer, on
   * purpose), and how long it took.
   */
  public record Result(int answered, int failed, int abandoned, Duration took) {
    /** This and {@code more} together: their requests and their times added. */
    Result plus(Result more) {
      return new Result(answered + more.answered, failed + more.failed, abandoned + more.abandoned,
          took.plus(more.took));
    }
  }

  private WarmUp() {}

  /**
   * Whether {@link #run} will warm anything up for {@code real}: it asks for requests, and this build has the native
   * layer that the copy's loopback workers run on.
   */
  public static boolean willRun(DisaggConfig real) {
    return real.affinity().warmUpRequests() > 0 && dev.affinity.nativebridge.NativeRequirement.system().isAvailable();
  }

  /**
   * Warms the path {@code real} describes with {@code real.affinity().warmUpRequests()} requests (none, or no native
   * layer: returns at once). Never throws for a failure of the warm-up itself: it is logged, and the frontend starts
   * cold.
   */
  public static Result run(DisaggConfig real) {
    return run(real, null);
  }

  /**
   * As {@link #run(DisaggConfig)}, with the copies on {@code io} (null: loops of their own): the event loops the
   * real frontend will run on ({@link AffinityServer#start(DisaggConfig, FrontendOptions, EventLoopGroup)}).
   */
  public static Result run(DisaggConfig real, EventLoopGroup io) {
    if (!willRun(real)) {
      if (real.affinity().warmUpRequests() > 0) {
        log.info("warm-up skipped: its loopback workers need the native layer, which this build does not have");
      }
      return new Result(0, 0, 0, Duration.ZERO);
    }
    int requests = real.affinity().warmUpRequests();
    long start = System.nanoTime();
    long deadline = start + TimeUnit.SECONDS.toNanos(MAX_SECONDS);
    // Two rounds, each on a copy of its own: closing a copy runs shutdown branches (event loops terminating,
    // executors stopping) that its requests never took, and the JIT, finding them inlined into the hottest
    // compiled methods (the event loop's run), throws those methods away to be profiled again. The second
    // round recompiles them with the shutdown branches in their profile, so its own close, and the real
    // frontend's start, leave the compiled code in place (measured: one round left the first 10,000 requests
    // at 5x the warm cost).
    Result total = new Result(0, 0, 0, Duration.ZERO);
    for (int round = 0; round < ROUNDS; round++) {
      Result r = round(real, requests / ROUNDS + (round == 0 ? requests % ROUNDS : 0), deadline, io);
      if (r == null) {
        break;
      }
      total = total.plus(r);
    }
    total = new Result(total.answered(), total.failed(), total.abandoned(),
        Duration.ofNanos(System.nanoTime() - start));
    log.info("warm-up: {} requests in {} rounds through copies of the request path in {} ms ({} failed, {} abandoned"
        + " on purpose)", total.answered() + total.failed() + total.abandoned(), ROUNDS, total.took().toMillis(),
        total.failed(), total.abandoned());
    return total;
  }

  /** One round: a copy of the path, {@code requests} requests through it, the copy closed; null when it failed. */
  private static Result round(DisaggConfig real, int requests, long deadline, EventLoopGroup io) {
    List<AutoCloseable> opened = new ArrayList<>();
    try (HandoffDomain handoff = new HandoffDomain()) {
      Map<String, Object> yaml = new LinkedHashMap<>();
      yaml.put("hostname", "127.0.0.1");
      yaml.put("port", 8000);  // replaced by an ephemeral port below
      yaml.put("schedule_style", real.scheduleStyle().name().toLowerCase(java.util.Locale.ROOT));
      real.subagentHeader().ifPresent(h -> {
        yaml.put("conversation_affinity_header_for_subagents", h);
        yaml.put("subagent_affinity_scope", real.subagentScope().name().toLowerCase(java.util.Locale.ROOT));
      });
      Map<String, Object> affinity = new LinkedHashMap<>();
      affinity.put("model", real.affinity().modelOrDefault());
      affinity.put("tokenizer", real.affinity().tokenizer());
      affinity.put("io_threads", real.affinity().ioThreads());
      affinity.put("session_headers", real.affinity().sessionHeaders());
      affinity.put("warm_up_requests", 0);
      Map<String, Object> embedded = new LinkedHashMap<>();
      yaml.put("context_servers", section(real.context(), "context", real, handoff, opened, embedded));
      yaml.put("generation_servers", section(real.generation(), "generation", real, handoff, opened, embedded));
      if (!embedded.isEmpty()) {
        affinity.put("workers", embedded);
      }
      yaml.put("affinity", affinity);
      DumperOptions dump = new DumperOptions();
      dump.setDefaultFlowStyle(DumperOptions.FlowStyle.BLOCK);
      DisaggConfig config = ConfigLoader.parse(new Yaml(dump).dump(yaml), "warm-up (from " + real.source() + ")")
          .config();
      // the copy's access log is the real one's kind when that writes nothing (the default at WARN): a call site
      // that saw only another class would be deoptimized at the real frontend's first request
      FrontendOptions copyOptions = FrontendOptions.fromConfig(config, AffinityServer.VERSION).withPort(0);
      if (real.affinity().accessLog().isPresent() || copyOptions.accessLog().enabled()) {
        copyOptions = copyOptions.withAccessLog(AccessLog.none());
      }
      AffinityServer server = io == null ? AffinityServer.start(config, copyOptions)
          : AffinityServer.start(config, copyOptions, io);
      opened.add(0, server);
      awaitReady(server.port());
      // In batches, each followed by a pause until the JIT's queue has drained: C2 compiles what crossed its
      // thresholds during the batch instead of that work spilling over into the real frontend's first requests
      Result sum = new Result(0, 0, 0, Duration.ZERO);
      for (int sent = 0; sent < requests; sent += BATCH) {
        if (System.nanoTime() > deadline) {
          log.warn("warm-up: stopped after {} s, {} requests short (affinity.warm_up_requests); the frontend starts"
              + " less warm", MAX_SECONDS, requests - sent);
          break;
        }
        long jit = jitMillis();
        sum = sum.plus(drive(server.port(), sent, Math.min(sent + BATCH, requests), real));
        awaitJitQuiet(deadline);
        log.debug("warm-up batch {}: {} ms of JIT compilation", sent / BATCH, jitMillis() - jit);
      }
      return sum;
    } catch (Exception | LinkageError e) {
      log.warn("warm-up stopped, the frontend starts less warm: {}", e.toString(), e);
      return null;
    } finally {
      for (AutoCloseable c : opened) {
        try {
          c.close();
        } catch (Exception e) {
          log.debug("warm-up: closing {} failed", c, e);
        }
      }
    }
  }

  /** The JIT's compilation time so far, in ms; 0 where the JVM does not measure it. */
  private static long jitMillis() {
    CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
    return jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() : 0;
  }

  /**
   * Waits until the JIT spends less than {@value #QUIET_JIT_MS} ms compiling over {@value #QUIET_MS} ms (a
   * stray compilation of an idle timer's code does not count), at most {@value #MAX_DRAIN_S} s.
   */
  private static void awaitJitQuiet(long warmUpDeadline) throws InterruptedException {
    long deadline = Math.min(warmUpDeadline, System.nanoTime() + TimeUnit.SECONDS.toNanos(MAX_DRAIN_S));
    long last = jitMillis();
    while (System.nanoTime() < deadline) {
      Thread.sleep(QUIET_MS);
      long now = jitMillis();
      if (now - last < QUIET_JIT_MS) {
        return;
      }
      last = now;
    }
  }

  /** One fleet of the copy: a loopback worker server for a remote fleet, a zero-cost embedded pool for an embedded one. */
  private static Map<String, Object> section(ServerSection realSection, String fleet, DisaggConfig real,
      HandoffDomain handoff, List<AutoCloseable> opened, Map<String, Object> embedded) throws IOException {
    Map<String, Object> s = new LinkedHashMap<>();
    s.put("num_instances", 1);
    s.put("router", router(realSection.router()));
    int ranks = realSection.embedded().map(p -> p.executorConfig().get("num_ranks"))
        .filter(Number.class::isInstance).map(n -> ((Number) n).intValue()).orElse(WorkerServer.DEFAULT_RANKS);
    Map<String, Object> executor = new LinkedHashMap<>();
    executor.put("num_ranks", ranks);
    executor.put("timing", ZERO_TIMING);
    if (realSection.isEmbedded()) {
      embedded.put(fleet, Map.of("instances", 1, "ranks", ranks, "executor", Map.of("timing", ZERO_TIMING)));
      return s;
    }
    String json = new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsString(executor);
    WorkerSettings settings = WorkerSettings.defaults().withName("warm-up-" + fleet)
        .withModel(real.affinity().modelOrDefault()).withTokenizer(real.affinity().tokenizer());
    WorkerServer w = WorkerServer.start(json, settings, FrontendOptions.defaults().withHost("127.0.0.1").withPort(0)
        .withIoThreads(1).withAccessLog(AccessLog.none()), AffinityServer.VERSION, handoff);
    opened.add(w);
    s.put("urls", List.of("127.0.0.1:" + w.port()));
    return s;
  }

  private static Map<String, Object> router(RouterConfig r) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("type", r.type());
    m.putAll(r.args());
    return m;
  }

  /** Waits up to 60 s for the copy's {@code /health} to answer 200. */
  private static void awaitReady(int port) throws IOException, InterruptedException {
    WarmUpClient client = new WarmUpClient(port, 1);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (client.get("/health") != 200) {
      if (System.nanoTime() > deadline) {
        throw new IOException("the warm-up copy did not become ready in 60 s");
      }
      Thread.sleep(20);
    }
  }

  /** Sends requests {@code from} to {@code to - 1}, {@value #CONCURRENCY} at a time. */
  private static Result drive(int port, int from, int to, DisaggConfig real) throws InterruptedException {
    String model = real.affinity().modelOrDefault();
    String subagentHeader = real.subagentHeader().orElse(null);
    String sessionHeader = real.affinity().sessionHeaders().isEmpty() ? null : real.affinity().sessionHeaders().get(0);
    return new WarmUpClient(port, CONCURRENCY).send(from, to, i -> {
      List<String[]> headers = new ArrayList<>(2);
      // every branch real traffic may take, taken here too: with and without a session, with a parent
      if (sessionHeader != null && (i & 4) != 0) {
        headers.add(new String[] {sessionHeader, "warm-up-" + (i % 61)});
        if (subagentHeader != null && (i & 8) != 0) {
          headers.add(new String[] {subagentHeader, "warm-up-" + ((i + 1) % 61)});
        }
      }
      return new WarmUpClient.Request(chat(i) ? "/v1/chat/completions" : "/v1/completions", body(i, model), headers);
    });
  }

  private static boolean chat(int i) {
    return (i & 1) == 0;
  }

  /**
   * The i-th request's body. The low bits of {@code i} choose a chat or a completion, whole or streamed (and, in
   * {@link #drive}, with or without a session and a parent), so that every combination comes round every 16
   * requests: the JIT then compiles every branch that real traffic takes, instead of compiling only the branches
   * it saw and deoptimizing at the first request that takes another (measured: a warm-up of one shape left the
   * first 10,000 real requests at 5x the warm cost). One request in 64 has a prompt long enough to be tokenized
   * off the event loop.
   */
  static String body(int i, String model) {
    boolean stream = (i & 2) != 0;
    String turn = "Warm-up turn " + (i / 61) + " of session " + (i % 61) + ": summarise the plan and list the next step.";
    if ((i >> 4 & 3) == 0) {  // one in four repeats one of four prompts (retries, the same one-shot task)
      turn = "Warm-up question " + (i >> 6 & 3) + ": what does a frontend do with a prompt it has seen before?";
    } else if (i % 64 == 63) {
      turn = turn.repeat(1 + dev.affinity.admission.PromptTokenizer.LONG_PROMPT_CHARS / turn.length());
    }
    if (chat(i)) {
      return "{\"model\": \"" + model + "\", \"messages\": [{\"role\": \"system\", \"content\": \"You are a careful"
          + " coding agent.\"}, {\"role\": \"user\", \"content\": \"" + turn + "\"}], \"max_tokens\": 4, \"stream\": "
          + stream + "}";
    }
    return "{\"model\": \"" + model + "\", \"prompt\": \"" + turn + "\", \"max_tokens\": 4, \"stream\": " + stream + "}";
  }
}
