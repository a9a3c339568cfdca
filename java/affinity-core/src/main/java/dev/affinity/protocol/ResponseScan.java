package dev.affinity.protocol;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.util.ByteArrayBuilder;
import java.io.IOException;
import java.util.Arrays;
import java.util.Optional;

/**
 * One pass of the streaming parser over a worker's whole (non-streamed) completion or chat-completion answer,
 * instead of a parse into records: it takes out what the orchestration reads ({@code usage},
 * {@code prompt_token_ids}, the first choice's {@code disaggregated_params} and {@code finish_reason}, how many choices
 * there are and whether the first carries its {@code message} / {@code text}) and, when
 * asked to relay, copies the answer token by token into the JSON a client gets: every {@code disaggregated_params}
 * removed and a slot left where {@code usage} stands, filled when the context leg's usage is known
 * ({@link #clientJson}).
 *
 * <p>The result is the JSON the record path writes ({@code parse...Response}, {@code withoutDisaggregatedParams},
 * {@code withUsageFromContext}, {@link ProtocolCodec#toJsonBytes}): a modelled field's explicit null is left out,
 * a choice without {@code finish_reason} gets {@code "finish_reason": null}, numbers of unmodelled fields keep
 * their exact decimals, strings are escaped by the same generator, {@code usage} and {@code prompt_token_ids} are
 * written from their records. Fields keep the worker's order (the records write theirs; a worker that writes its
 * fields in the records' order, as trtllm-serve and Affinity workers do, gets the same bytes). The pass accepts
 * only what the record path accepts: every modelled field is checked for the type its record wants, records that
 * carry rules of their own ({@code disaggregated_params}) are read with their deserializers ({@code usage} by hand,
 * with its record's rules), and
 * duplicate keys are refused. Whatever it does not handle the same way (a content-part array, a missing
 * {@code choices} or {@code role}, a type the records refuse, malformed JSON) makes it give up:
 * {@link ProtocolCodec#scanResponse} returns null and the caller parses the answer into records, which also
 * produces the error, if any.
 *
 * <p>Why a second path beside the records: measured end to end (docs/benchmarks.md, "ResponseScan against the
 * record path", {@code scripts/bench-frontend} with the record-only build as baseline in the same rounds, three
 * sittings), the frontend spends 20-27 us less CPU per two-leg request with it, 23-27% of its whole cost (67.2
 * against 87.0 us, 71.9 against 98.5, 80.9 against 105.5); the walk itself is {@link ResponseScanner}.
 */
public final class ResponseScan {
  private final ProtocolCodec codec;
  private final UsageInfo usage;
  private final TokenIds promptTokenIds;
  private final String promptTokenIdsB64;
  private final DisaggregatedParams firstParams;
  private final String firstFinishReason;
  private final int choiceCount;
  private final boolean firstOutput;
  /** The client's JSON with an empty slot at {@link #usageAt} (when {@code usage} is set); null when not relayed. */
  private final byte[] body;
  private final int usageAt;

  private ResponseScan(ProtocolCodec codec, ResponseScanner s, byte[] body) {
    this.codec = codec;
    this.usage = s.usage;
    this.promptTokenIds = s.promptTokenIds;
    this.promptTokenIdsB64 = s.promptTokenIdsB64;
    this.firstParams = s.firstParams;
    this.firstFinishReason = s.firstFinishReason;
    this.choiceCount = s.choiceCount;
    this.firstOutput = s.firstOutput;
    this.body = body;
    this.usageAt = s.usageAt;
  }

  /** The scan of {@code json}, or null when it gave up (see the class comment). */
  static ResponseScan scan(ProtocolCodec codec, byte[] json, boolean chat, boolean relay, SentPrompt sent) {
    if (json == null) {
      return null;
    }
    ByteArrayBuilder out = relay ? new ByteArrayBuilder(json.length) : null;
    byte[] scanned = sent != null && sent.ids() != null && !relay ? withoutPromptIds(json, sent.ids()) : json;
    try (JsonParser p = codec.createParser(scanned);
        JsonGenerator g = relay ? codec.createGenerator(out) : null) {
      ResponseScanner s = new ResponseScanner(codec, p, g, out, chat, sent);
      s.answer();
      byte[] body = null;
      if (g != null) {
        g.flush();
        body = out.toByteArray();
      }
      return new ResponseScan(codec, s, body);
    } catch (IOException | RuntimeException e) {
      return null; // the record path decides: it parses what this pass does not handle, or names the error
    }
  }

  /**
   * {@code json} with its top-level {@code prompt_token_ids} array, if it has one of plain integers, replaced by
   * {@code []}: the answer to a leg that sent its ids ({@link ResponseScanner} lets the sent ids stand for them), so
   * the history's ids are neither parsed nor even tokenized by the parser; one pass over the bytes that follows strings
   * and nesting, and a copy of everything but the ids. The answer itself otherwise; what is not valid JSON is left to
   * the parser to refuse. Where the array's bytes are {@code sent}'s JSON as the leg carried it (a worker that writes
   * its ids as Jackson or pydantic do, with no spaces), its end is found by comparing them with it, which runs at
   * memory speed, instead of by reading each id (a 176k-token prompt's 1.1 MB of ids took ~250 us a turn to read, the
   * comparison ~30); any other spelling is read.
   */
  static byte[] withoutPromptIds(byte[] json, TokenIds sent) {
    int depth = 0;
    for (int i = 0; i < json.length; i++) {
      byte c = json[i];
      if (c == '"') {
        int end = i + 1;
        while (end < json.length && json[end] != '"') {
          end += json[end] == '\\' ? 2 : 1;
        }
        if (depth == 1 && isKey(json, i + 1, end)) {
          int at = Utf8.skipJsonSpace(json, end + 1);
          if (at < json.length && json[at] == ':') {
            return excise(json, Utf8.skipJsonSpace(json, at + 1), sent);
          }
        }
        i = end;
      } else if (c == '{' || c == '[') {
        depth++;
      } else if (c == '}' || c == ']') {
        depth--;
      }
    }
    return json;
  }

  private static final byte[] KEY = "prompt_token_ids".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
  /** The bytes of an array of integers between its brackets: digits, minus, commas and JSON whitespace. */
  private static final boolean[] IN_INT_ARRAY = new boolean[256];

  static {
    for (char c : "0123456789-, \n\r\t".toCharArray()) {
      IN_INT_ARRAY[c] = true;
    }
  }

  private static final java.lang.invoke.VarHandle LONGS =
      java.lang.invoke.MethodHandles.byteArrayViewVarHandle(long[].class, java.nio.ByteOrder.LITTLE_ENDIAN);
  private static final long ONES = 0x0101010101010101L;
  private static final long HIGH = 0x8080808080808080L;

  /**
   * Whether each of the eight bytes of {@code w} is a digit, {@code ,} or {@code -}: ASCII, within
   * {@code [0x2C, 0x39]}, and neither {@code .} (0x2E) nor {@code /} (0x2F).
   */
  static boolean digitsAndCommas(long w) {
    if ((w & HIGH) != 0 || ((w + 0x54 * ONES) & HIGH) != HIGH || ((w + 0x46 * ONES) & HIGH) != 0) {
      return false;
    }
    long dots = (w & 0xFEFEFEFEFEFEFEFEL) ^ 0x2E2E2E2E2E2E2E2EL;  // a zero byte where . or /
    return ((dots - ONES) & ~dots & HIGH) == 0;
  }

  private static boolean isKey(byte[] json, int from, int to) {
    return to - from == KEY.length && Arrays.equals(json, from, to, KEY, 0, KEY.length);
  }

  /** {@code json} with the array of integers at {@code start} replaced by {@code []}; as it is when none is there. */
  private static byte[] excise(byte[] json, int start, TokenIds sent) {
    if (start >= json.length || json[start] != '[') {
      return json;
    }
    int spelled = sent == null ? -1 : sent.keptJsonAt(json, start);
    int end = spelled > 0 ? start + spelled - 1 : intsEnd(json, start + 1);
    if (end >= json.length || json[end] != ']') {
      return json;
    }
    byte[] out = new byte[json.length - (end - start - 1)];
    System.arraycopy(json, 0, out, 0, start + 1);
    System.arraycopy(json, end, out, start + 1, json.length - end);
    return out;
  }

  /** Where the digits, commas, minus signs and JSON whitespace from {@code from} end. */
  private static int intsEnd(byte[] json, int from) {
    int end = from;
    while (end < json.length) {  // this runs over every id: eight bytes at a time while they are digits and commas
      while (end + Long.BYTES <= json.length && digitsAndCommas((long) LONGS.get(json, end))) {
        end += Long.BYTES;
      }
      if (end >= json.length || !IN_INT_ARRAY[json[end] & 0xff]) {
        break;
      }
      end++;
    }
    return end;
  }

  /** {@code usage}, or null. */
  public UsageInfo usage() {
    return usage;
  }

  /** {@code prompt_token_ids}, or null. */
  public TokenIds promptTokenIds() {
    return promptTokenIds;
  }

  /** A chat answer's {@code prompt_token_ids_b64} (base64 int32 ids), or null. */
  public String promptTokenIdsB64() {
    return promptTokenIdsB64;
  }

  /** {@code choices[0].disaggregated_params}. */
  public Optional<DisaggregatedParams> firstDisaggregatedParams() {
    return Optional.ofNullable(firstParams);
  }

  /** {@code choices[0].finish_reason}, when there is one. */
  public Optional<String> firstFinishReason() {
    return Optional.ofNullable(firstFinishReason);
  }

  /** How many choices the answer has. */
  public int choiceCount() {
    return choiceCount;
  }

  /** Whether {@code choices[0]} carries its output: a chat {@code message}, a completion's {@code text}. */
  public boolean firstChoiceHasOutput() {
    return firstOutput;
  }

  /** Whether the scan copied the answer ({@link #clientJson} works). */
  public boolean relayed() {
    return body != null;
  }

  /**
   * The answer as a client gets it: without {@code disaggregated_params}, and its {@code usage} rewritten from
   * {@code ctxUsage} when that is not null ({@link UsageInfo#withContextUsage}); the bytes the record path writes for
   * {@code parsed.withoutDisaggregatedParams().withUsageFromContext(ctxUsage)}, up to the order of fields.
   *
   * @throws IllegalStateException when the scan did not relay
   */
  public byte[] clientJson(UsageInfo ctxUsage) {
    if (body == null) {
      throw new IllegalStateException("the answer was scanned, not relayed");
    }
    if (usageAt < 0) {
      return body;
    }
    byte[] u = usageJson(ctxUsage == null ? usage : usage.withContextUsage(ctxUsage));
    byte[] json = new byte[body.length + u.length];
    System.arraycopy(body, 0, json, 0, usageAt);
    System.arraycopy(u, 0, json, usageAt, u.length);
    System.arraycopy(body, usageAt, json, usageAt + u.length, body.length - usageAt);
    return json;
  }

  /**
   * {@code usage} as the record writes it: by hand when it has only the modelled counts (what workers send), else by
   * the codec.
   */
  private byte[] usageJson(UsageInfo u) {
    PromptTokensDetails details = u.promptTokensDetails();
    if (!u.extra().isEmpty() || details != null && !details.extra().isEmpty()) {
      return codec.toJsonBytes(u);
    }
    byte[] b = new byte[160]; // the longest: four names and four ints of 11 characters
    int n = 0;
    b[n++] = '{';
    n = count(b, n, "\"prompt_tokens\":", u.promptTokens());
    n = count(b, n, "\"completion_tokens\":", u.completionTokens());
    n = count(b, n, "\"total_tokens\":", u.totalTokens());
    if (details != null) {
      n = ascii(b, n, n > 1 ? ",\"prompt_tokens_details\":{" : "\"prompt_tokens_details\":{");
      if (details.cachedTokens() != null) {
        n = ascii(b, ascii(b, n, "\"cached_tokens\":"), Integer.toString(details.cachedTokens()));
      }
      b[n++] = '}';
    }
    b[n++] = '}';
    return Arrays.copyOf(b, n);
  }

  /** {@code "name":value} after a comma when something came before, or nothing for a null value. */
  private static int count(byte[] b, int at, String name, Integer value) {
    if (value == null) {
      return at;
    }
    int n = at;
    if (n > 1) {
      b[n++] = ',';
    }
    return ascii(b, ascii(b, n, name), Integer.toString(value));
  }

  private static int ascii(byte[] b, int at, String s) {
    int n = at;
    for (int i = 0; i < s.length(); i++) {
      b[n++] = (byte) s.charAt(i);
    }
    return n;
  }
}
