package dev.affinity.bench.live;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.bench.trace.ClaudeCodeTrace;
import dev.affinity.bench.trace.ClaudeCodeTraceReader;
import dev.affinity.tokenizer.ChatInput;
import dev.affinity.tokenizer.ModelTokenizer;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code affinity bench chat-hits}: the prefix (KV) hit ratio through a running frontend on real Claude Code traces
 * replayed as chat text (TensorRT-LLM issue #14882's comparison). Every block id of a trace becomes a deterministic
 * English-ish text (words drawn with a generator seeded by the trace id and the block id), so equal ids give equal
 * texts and prefix-chained ids give prefix-extending chats: a call is {@code [system: its first blocks, user: the
 * rest]}, sent as a non-streaming {@code /v1/chat/completions} with the conversation's session header
 * ({@code <trace id>/<agent id>}). Each agent (the main one and every sub-agent) is one conversation, its calls sent in
 * order, one at a time, with a pause between them (the frontend polls the workers' KV events); a few conversations run
 * together.
 *
 * <p>The reused tokens are the context worker's, from the {@code x-affinity-route} debug header ({@code reused=N}); the
 * prompt tokens are the answer's {@code usage.prompt_tokens}. The ideal is what one infinite cache would reuse: the
 * longest prefix of the call already in any call sent before it — in whole KV blocks of the rendered
 * chat's token ids when {@code --tokenizer} names the model (the workers' tokenizer and chat template), else from the
 * block ids (the matched share of the call's ids times its prompt tokens). Prints a markdown table, appends a CSV row.
 */
@Command(
    name = "chat-hits",
    mixinStandardHelpOptions = true,
    description = "Replay Claude Code traces as chat text against a running frontend and report the prefix (KV) hit "
        + "ratio: reused / prompt tokens from x-affinity-route, against an infinite single cache's.")
public final class ChatHitRatio implements Callable<Integer> {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Spec
  CommandSpec spec;

  @Parameters(arity = "1..*", paramLabel = "TRACE.json", description = "Claude Code trace files (docs/traces.md).")
  List<Path> traces;

  @Option(names = "--url", defaultValue = "http://127.0.0.1:8000", description = "The frontend (default: ${DEFAULT-VALUE}).")
  String url;

  @Option(names = "--model", defaultValue = "m", description = "Model name to send (default: ${DEFAULT-VALUE}).")
  String model;

  @Option(names = "--label", defaultValue = "run", description = "Name of this run in the table (default: ${DEFAULT-VALUE}).")
  String label;

  @Option(names = "--requests", defaultValue = "10", description = "At most this many calls per conversation (default: ${DEFAULT-VALUE}).")
  int maxRequests;

  @Option(names = "--max-tokens", defaultValue = "16384",
      description = "A call's blocks are cut where its text would pass this many tokens (the tokenizer's count with "
          + "--tokenizer, else ~1.1 per word; default: ${DEFAULT-VALUE}).")
  int maxTokens;

  @Option(names = "--words-per-block", defaultValue = "58",
      description = "Words of text per trace block id (58 ~ the trace's 64 tokens in Qwen3's tokenizer; fewer shrinks every "
          + "call alike; default: ${DEFAULT-VALUE}).")
  int wordsPerBlock;

  @Option(names = "--system-blocks", defaultValue = "8",
      description = "Leading blocks of a call that form its system message (at most all but one; default: ${DEFAULT-VALUE}).")
  int systemBlocks;

  @Option(names = "--output-tokens", defaultValue = "4", description = "max_tokens of every call (default: ${DEFAULT-VALUE}).")
  int outputTokens;

  @Option(names = "--concurrency", defaultValue = "4", description = "Conversations in flight together (default: ${DEFAULT-VALUE}).")
  int concurrency;

  @Option(names = "--think-ms", defaultValue = "1000",
      description = "Pause between a conversation's calls, so the frontend has polled the worker's KV events (it polls every 500 ms; default: ${DEFAULT-VALUE}).")
  long thinkMs;

  @Option(names = "--subagents", negatable = true, defaultValue = "true", fallbackValue = "true",
      description = "Replay the traces' sub-agents as conversations of their own (default: on; --no-subagents: off).")
  boolean subagents;

  @Option(names = "--session-header", defaultValue = "X-Session-ID", description = "Conversation id header (default: ${DEFAULT-VALUE}).")
  String sessionHeader;

  @Option(names = "--tokenizer", paramLabel = "DIR",
      description = "The model's tokenizer directory (the workers'): caps and the ideal in exact tokens and KV blocks.")
  Path tokenizerDir;

  @Option(names = "--block-tokens", defaultValue = "32", description = "The workers' tokens_per_block, for the ideal (default: ${DEFAULT-VALUE}).")
  int blockTokens;

  @Option(names = "--request-timeout-s", defaultValue = "300", description = "Time allowed per call (default: ${DEFAULT-VALUE}).")
  long requestTimeoutS;

  @Option(names = "--csv", paramLabel = "FILE", description = "Append the summary row to this CSV file (header when new).")
  Path csv;

  @Option(names = "--requests-csv", paramLabel = "FILE", description = "Append one row per call to this CSV file.")
  Path requestsCsv;

  private ModelTokenizer tokenizer;
  private BlockTexts texts;
  private HttpClient client;
  private URI endpoint;
  /** Chain keys of every whole KV block (or trace block id, without a tokenizer) of the calls sent so far. */
  private final Set<Long> idealCache = new HashSet<>();
  private final Map<Long, Integer> blockTokenEstimate = new HashMap<>();

  public static void main(String[] args) {
    System.exit(new CommandLine(new ChatHitRatio()).execute(args));
  }

  /** One call of a conversation: its trace block ids (already capped). */
  record Call(long[] ids) {}

  /** One agent's calls; {@code session} is {@code <trace id>/<agent id>}. */
  record Conversation(String traceId, String session, List<Call> calls) {}

  /** What one call produced. */
  record Result(String session, int turn, int status, String error, int promptTokens, int reused, int ideal,
      int localTokens, String ctx, long latencyMs) {}

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    if (maxRequests < 1 || maxTokens < 64 || wordsPerBlock < 1 || concurrency < 1 || blockTokens < 1 || systemBlocks < 0) {
      throw new IllegalArgumentException("--requests, --words-per-block, --concurrency, --block-tokens must be >= 1, "
          + "--max-tokens >= 64, --system-blocks >= 0");
    }
    texts = new BlockTexts(wordsPerBlock);
    if (tokenizerDir != null) {
      tokenizer = ModelTokenizer.load(tokenizerDir);
    }
    List<Conversation> conversations = new ArrayList<>();
    for (Path p : traces) {
      ClaudeCodeTrace t = ClaudeCodeTraceReader.read(p);
      collect(t.id(), t.main(), conversations);
    }
    int total = conversations.stream().mapToInt(c -> c.calls().size()).sum();
    err.printf(Locale.ROOT, "chat-hits %s: %d conversations, %d calls, %s%n", label, conversations.size(), total, url);
    err.flush();
    client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10)).build();
    endpoint = URI.create(url.replaceAll("/+$", "") + "/v1/chat/completions");
    long start = System.nanoTime();
    List<Result> results = new ArrayList<>();
    ExecutorService pool = Executors.newFixedThreadPool(concurrency);
    try {
      List<Future<List<Result>>> futures = new ArrayList<>();
      for (Conversation c : conversations) {
        futures.add(pool.submit(() -> play(c)));
      }
      for (Future<List<Result>> f : futures) {
        results.addAll(f.get());
      }
    } finally {
      pool.shutdownNow();
    }
    double wallS = (System.nanoTime() - start) / 1e9;
    new HitRatioReport(label, tokenizer != null, csv, requestsCsv).write(results, wallS, out, err);
    return results.stream().anyMatch(r -> r.status() != 200) ? 1 : 0;
  }

  private void collect(String traceId, ClaudeCodeTrace.Agent agent, List<Conversation> into) {
    List<Call> calls = new ArrayList<>();
    List<ClaudeCodeTrace.Agent> subs = new ArrayList<>();
    for (ClaudeCodeTrace.Entry e : agent.entries()) {
      if (e instanceof ClaudeCodeTrace.Call c) {
        if (calls.size() < maxRequests && c.hashIds().length > 0) {
          calls.add(new Call(cap(traceId, c.hashIds())));
        }
      } else if (e instanceof ClaudeCodeTrace.SubAgent s && subagents) {
        subs.add(s.agent());
      }
    }
    if (!calls.isEmpty()) {
      into.add(new Conversation(traceId, traceId + "/" + agent.agentId(), calls));
    }
    for (ClaudeCodeTrace.Agent s : subs) {
      collect(traceId, s, into);
    }
  }

  /** The leading ids whose text fits in {@code --max-tokens} (less a margin for the chat template). */
  private long[] cap(String traceId, long[] ids) {
    int budget = maxTokens - 32;
    int n = 0;
    int used = 0;
    while (n < ids.length) {
      used += tokensOf(traceId, ids[n]);
      if (used > budget) {
        break;
      }
      n++;
    }
    return java.util.Arrays.copyOf(ids, Math.max(1, n));
  }

  private int tokensOf(String traceId, long id) {
    long key = BlockTexts.seed(traceId, id);
    synchronized (blockTokenEstimate) {
      return blockTokenEstimate.computeIfAbsent(key, k -> tokenizer != null
          ? tokenizer.encode(" " + texts.blockText(traceId, id), false).length
          : (int) Math.ceil(wordsPerBlock * 1.1));
    }
  }

  private List<Result> play(Conversation c) throws InterruptedException {
    List<Result> results = new ArrayList<>();
    for (int i = 0; i < c.calls().size(); i++) {
      if (i > 0 && thinkMs > 0) {
        Thread.sleep(thinkMs);
      }
      results.add(send(c, i));
    }
    return results;
  }

  private Result send(Conversation c, int turn) {
    long[] ids = c.calls().get(turn).ids();
    int sys = Math.min(systemBlocks, ids.length - 1);
    String system = texts.text(c.traceId(), ids, 0, sys);
    String user = texts.text(c.traceId(), ids, sys, ids.length);
    List<Map<String, Object>> messages = new ArrayList<>();
    if (sys > 0) {
      messages.add(message("system", system));
    }
    messages.add(message("user", user));
    // the ideal's keys: whole KV blocks of the rendered ids, or the trace's block ids
    long[] keys;
    int localTokens = -1;
    if (tokenizer != null) {
      int[] tokens;
      synchronized (tokenizer) {
        tokens = tokenizer.encodeChat(new ChatInput(messages, null, true, Map.of()));
      }
      localTokens = tokens.length;
      keys = blockKeys(tokens);
    } else {
      keys = idKeys(ids);
    }
    // an infinite cache that holds every call sent before this one (a call sent while another conversation's is in
    // flight may reuse its blocks, as the workers do once that prefill is done)
    int matched;
    synchronized (idealCache) {
      matched = 0;
      while (matched < keys.length && idealCache.contains(keys[matched])) {
        matched++;
      }
      for (long k : keys) {
        idealCache.add(k);
      }
    }
    ObjectNode body = JSON.createObjectNode();
    body.put("model", model);
    ArrayNode msgs = body.putArray("messages");
    for (Map<String, Object> m : messages) {
      msgs.addObject().put("role", (String) m.get("role")).put("content", (String) m.get("content"));
    }
    body.put("max_tokens", outputTokens);
    long t0 = System.nanoTime();
    int status;
    String error = null;
    int prompt = -1;
    int reused = -1;
    String ctx = null;
    try {
      HttpRequest req = HttpRequest.newBuilder(endpoint).timeout(Duration.ofSeconds(requestTimeoutS))
          .header("content-type", "application/json").header(sessionHeader, c.session())
          .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body), StandardCharsets.UTF_8)).build();
      HttpResponse<String> resp = client.send(req, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
      status = resp.statusCode();
      String route = resp.headers().firstValue("x-affinity-route").orElse(null);
      if (route != null) {
        Map<String, String> kv = routeFields(route);
        ctx = kv.get("ctx");
        reused = parseInt(kv.get("reused"));
      }
      if (status == 200) {
        JsonNode json = JSON.readTree(resp.body());
        prompt = json.path("usage").path("prompt_tokens").asInt(-1);
        if (reused < 0) {
          reused = json.path("usage").path("prompt_tokens_details").path("cached_tokens").asInt(-1);
        }
        if (route == null) {
          error = "no x-affinity-route header (debug_headers: true?)";
        }
      } else {
        error = "HTTP " + status + ": " + abbreviate(resp.body());
      }
    } catch (IOException e) {
      status = 599;
      error = e.toString();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      status = 599;
      error = "interrupted";
    }
    long ms = (System.nanoTime() - t0) / 1_000_000;
    int ideal;
    if (tokenizer != null) {
      ideal = matched * blockTokens;
    } else {
      ideal = prompt < 0 ? 0 : (int) Math.round((double) prompt * matched / Math.max(1, keys.length));
    }
    return new Result(c.session(), turn, status, error, prompt, reused, ideal, localTokens, ctx, ms);
  }

  private static Map<String, Object> message(String role, String content) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("role", role);
    m.put("content", content);
    return m;
  }

  /** Chain keys of the whole {@code --block-tokens} blocks of {@code tokens}: equal keys, equal prefixes. */
  private long[] blockKeys(int[] tokens) {
    long[] keys = new long[tokens.length / blockTokens];
    long h = 0x243F6A8885A308D3L;
    for (int b = 0; b < keys.length; b++) {
      for (int i = b * blockTokens; i < (b + 1) * blockTokens; i++) {
        h = mix(h * 0x100000001B3L + tokens[i]);
      }
      keys[b] = h;
    }
    return keys;
  }

  /** Chain keys of the trace's block ids. */
  private static long[] idKeys(long[] ids) {
    long[] keys = new long[ids.length];
    long h = 0x13198A2E03707344L;
    for (int i = 0; i < ids.length; i++) {
      h = mix(h * 0x100000001B3L + ids[i]);
      keys[i] = h;
    }
    return keys;
  }

  static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  private static Map<String, String> routeFields(String header) {
    Map<String, String> m = new HashMap<>();
    for (String part : header.split(";")) {
      String[] kv = part.trim().split("=", 2);
      if (kv.length == 2) {
        m.put(kv[0].trim(), kv[1].trim());
      }
    }
    return m;
  }

  private static int parseInt(String s) {
    if (s == null) {
      return -1;
    }
    try {
      return Integer.parseInt(s);
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  private static String abbreviate(String s) {
    s = s.replaceAll("\\s+", " ");
    return s.length() > 300 ? s.substring(0, 300) + "..." : s;
  }
}
