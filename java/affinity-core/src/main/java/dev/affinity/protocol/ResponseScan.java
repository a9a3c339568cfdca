package dev.affinity.protocol;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.util.ByteArrayBuilder;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * One pass of the streaming parser over a worker's whole (non-streamed) completion or chat-completion answer,
 * instead of a parse into records: it takes out what the orchestration reads ({@code usage},
 * {@code prompt_token_ids}, the first choice's {@code disaggregated_params} and {@code finish_reason}) and, when
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
 */
public final class ResponseScan {
  private final ProtocolCodec codec;
  private final UsageInfo usage;
  private final TokenIds promptTokenIds;
  private final DisaggregatedParams firstParams;
  private final String firstFinishReason;
  /** The client's JSON with an empty slot at {@link #usageAt} (when {@code usage} is set); null when not relayed. */
  private final byte[] body;
  private final int usageAt;

  private ResponseScan(ProtocolCodec codec, Scanner s, byte[] body) {
    this.codec = codec;
    this.usage = s.usage;
    this.promptTokenIds = s.promptTokenIds;
    this.firstParams = s.firstParams;
    this.firstFinishReason = s.firstFinishReason;
    this.body = body;
    this.usageAt = s.usageAt;
  }

  /** The scan of {@code json}, or null when it gave up (see the class comment). */
  static ResponseScan scan(ProtocolCodec codec, byte[] json, boolean chat, boolean relay) {
    if (json == null) {
      return null;
    }
    ByteArrayBuilder out = relay ? new ByteArrayBuilder(json.length) : null;
    try (JsonParser p = codec.createParser(json);
        JsonGenerator g = relay ? codec.createGenerator(out) : null) {
      Scanner s = new Scanner(codec, p, g, out, chat);
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

  /** {@code usage}, or null. */
  public UsageInfo usage() {
    return usage;
  }

  /** {@code prompt_token_ids}, or null. */
  public TokenIds promptTokenIds() {
    return promptTokenIds;
  }

  /** {@code choices[0].disaggregated_params}. */
  public Optional<DisaggregatedParams> firstDisaggregatedParams() {
    return Optional.ofNullable(firstParams);
  }

  /** {@code choices[0].finish_reason}, when there is one. */
  public Optional<String> firstFinishReason() {
    return Optional.ofNullable(firstFinishReason);
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
    if (!u.extraForJson().isEmpty() || details != null && !details.extraForJson().isEmpty()) {
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

  /** Thrown where the record path would treat the answer differently; never escapes {@link #scan}. */
  private static final class GiveUp extends RuntimeException {
    GiveUp() {
      super(null, null, false, false);
    }
  }

  /**
   * The field names of one object so far. A repeated name makes the scan give up: the records keep the last value
   * at the first one's place (cheaper than the parser's own duplicate detection, which hashes every name).
   */
  private static final class Names {
    private String[] names = new String[8];
    private int count;
    private Set<String> many;

    String add(String name) {
      if (many != null) {
        if (!many.add(name)) {
          throw new GiveUp();
        }
        return name;
      }
      for (int i = 0; i < count; i++) {
        if (names[i].equals(name)) {
          throw new GiveUp();
        }
      }
      if (count == names.length) {
        many = new HashSet<>(Arrays.asList(names));
        many.add(name);
        return name;
      }
      names[count++] = name;
      return name;
    }
  }

  /** The walk itself; writes only when it has a generator. */
  private static final class Scanner {
    private final ProtocolCodec codec;
    private final JsonParser p;
    private final JsonGenerator g;
    private final ByteArrayBuilder out;
    private final boolean chat;
    UsageInfo usage;
    TokenIds promptTokenIds;
    DisaggregatedParams firstParams;
    String firstFinishReason;
    int usageAt = -1;

    Scanner(ProtocolCodec codec, JsonParser p, JsonGenerator g, ByteArrayBuilder out, boolean chat) {
      this.codec = codec;
      this.p = p;
      this.g = g;
      this.out = out;
      this.chat = chat;
    }

    /** The top-level object ({@link CompletionResponse}, {@link ChatCompletionResponse}), then the end of input. */
    void answer() throws IOException {
      expect(p.nextToken(), JsonToken.START_OBJECT);
      if (g != null) {
        g.writeStartObject();
      }
      boolean choices = false;
      Names seen = new Names();
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = seen.add(p.currentName());
        JsonToken t = p.nextToken();
        switch (name) {
          case "id", "object", "model" -> string(name, t);
          case "created" -> integer(name, t, false);
          case "choices" -> {
            choices = true;
            choices(t);
          }
          case "usage" -> usage(t);
          case "prompt_token_ids" -> promptTokenIds = tokenIds(name, t);
          case "prompt_token_ids_b64" -> {
            if (chat) {
              string(name, t);
            } else {
              copyField(name);
            }
          }
          default -> copyField(name);
        }
      }
      if (!choices) {
        throw new GiveUp(); // the record writes "choices": []
      }
      if (g != null) {
        g.writeEndObject();
      }
      if (p.nextToken() != null) {
        throw new GiveUp();
      }
    }

    private void choices(JsonToken t) throws IOException {
      expect(t, JsonToken.START_ARRAY); // null: the record writes []
      if (g != null) {
        g.writeFieldName("choices");
        g.writeStartArray();
      }
      int i = 0;
      for (JsonToken e = p.nextToken(); e != JsonToken.END_ARRAY; e = p.nextToken()) {
        expect(e, JsonToken.START_OBJECT);
        choice(i++ == 0);
      }
      if (g != null) {
        g.writeEndArray();
      }
    }

    /** One choice ({@link CompletionChoice}, {@link ChatChoice}); the parser stands on its start. */
    private void choice(boolean first) throws IOException {
      if (g != null) {
        g.writeStartObject();
      }
      boolean finish = false;
      Names seen = new Names();
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = seen.add(p.currentName());
        JsonToken t = p.nextToken();
        switch (name) {
          case "index" -> integer(name, t, true);
          case "finish_reason" -> {
            finish = true;
            if (t != JsonToken.VALUE_NULL) {
              expect(t, JsonToken.VALUE_STRING);
              if (first) {
                firstFinishReason = p.getText();
              }
            }
            copyField(name); // written even when null
          }
          case "logprobs" -> {
            if (t != JsonToken.VALUE_NULL) {
              expect(t, JsonToken.START_OBJECT);
            }
            copyField(name); // an explicit null is kept
          }
          case "stop_reason" -> {
            if (t != JsonToken.VALUE_NULL && t != JsonToken.VALUE_STRING && t != JsonToken.VALUE_NUMBER_INT
                && t != JsonToken.VALUE_NUMBER_FLOAT) {
              throw new GiveUp();
            }
            copyField(name);
          }
          case "disaggregated_params" -> {
            if (t != JsonToken.VALUE_NULL) { // read for the orchestration, never written for a client
              expect(t, JsonToken.START_OBJECT);
              DisaggregatedParams params = codec.readValue(p, DisaggregatedParams.class);
              if (first) {
                firstParams = params;
              }
            }
          }
          default -> choiceField(name, t);
        }
      }
      if (!finish && g != null) {
        g.writeFieldName("finish_reason");
        g.writeNull();
      }
      if (g != null) {
        g.writeEndObject();
      }
    }

    /** The fields of one kind of choice only. */
    private void choiceField(String name, JsonToken t) throws IOException {
      if (chat && name.equals("message")) {
        if (t != JsonToken.VALUE_NULL) {
          expect(t, JsonToken.START_OBJECT);
          if (g != null) {
            g.writeFieldName(name);
          }
          message();
        }
      } else if (!chat && name.equals("text")) {
        string(name, t);
      } else if (!chat && name.equals("token_ids")) {
        tokenIds(name, t);
      } else {
        copyField(name);
      }
    }

    /** A chat message ({@link ChatMessage}); the parser stands on its start. */
    private void message() throws IOException {
      if (g != null) {
        g.writeStartObject();
      }
      boolean role = false;
      Names seen = new Names();
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = seen.add(p.currentName());
        JsonToken t = p.nextToken();
        switch (name) {
          case "role" -> {
            expect(t, JsonToken.VALUE_STRING); // required
            role = true;
            copyField(name);
          }
          case "content" -> {
            if (t != JsonToken.VALUE_NULL) {
              expect(t, JsonToken.VALUE_STRING); // content parts: the records decide
            }
            copyField(name); // an explicit null is kept
          }
          case "name", "tool_call_id", "reasoning", "reasoning_content" -> string(name, t);
          case "tool_calls" -> {
            if (t != JsonToken.VALUE_NULL) {
              expect(t, JsonToken.START_ARRAY);
              if (g != null) {
                g.writeFieldName(name);
                g.writeStartArray();
              }
              for (JsonToken e = p.nextToken(); e != JsonToken.END_ARRAY; e = p.nextToken()) {
                expect(e, JsonToken.START_OBJECT);
                toolCall();
              }
              if (g != null) {
                g.writeEndArray();
              }
            }
          }
          default -> copyField(name);
        }
      }
      if (!role) {
        throw new GiveUp();
      }
      if (g != null) {
        g.writeEndObject();
      }
    }

    /** One {@link ToolCall}; the parser stands on its start. */
    private void toolCall() throws IOException {
      if (g != null) {
        g.writeStartObject();
      }
      Names seen = new Names();
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = seen.add(p.currentName());
        JsonToken t = p.nextToken();
        switch (name) {
          case "id", "type" -> string(name, t);
          case "index" -> integer(name, t, true);
          case "function" -> {
            if (t != JsonToken.VALUE_NULL) {
              expect(t, JsonToken.START_OBJECT);
              if (g != null) {
                g.writeFieldName(name);
                g.writeStartObject();
              }
              Names fields = new Names();
              while (p.nextToken() == JsonToken.FIELD_NAME) {
                String f = fields.add(p.currentName());
                JsonToken v = p.nextToken();
                if (f.equals("name") || f.equals("arguments")) {
                  string(f, v);
                } else {
                  copyField(f);
                }
              }
              if (g != null) {
                g.writeEndObject();
              }
            }
          }
          default -> copyField(name);
        }
      }
      if (g != null) {
        g.writeEndObject();
      }
    }

    /** {@code usage}: read with its record's rules; the relay leaves its slot empty for {@link #clientJson}. */
    private void usage(JsonToken t) throws IOException {
      if (t == JsonToken.VALUE_NULL) {
        return;
      }
      expect(t, JsonToken.START_OBJECT);
      usage = readUsage();
      if (g != null) {
        g.writeFieldName("usage");
        g.writeRawValue(""); // the separators are written; the slot is where the value goes
        g.flush();
        usageAt = out.size();
      }
    }

    /**
     * A {@link UsageInfo} as its record reads it (counts must be ints; other fields are kept as JSON trees); the
     * parser stands on its start.
     */
    private UsageInfo readUsage() throws IOException {
      Integer prompt = null;
      Integer completion = null;
      Integer total = null;
      PromptTokensDetails details = null;
      Map<String, JsonNode> extra = null;
      Names seen = new Names();
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = seen.add(p.currentName());
        JsonToken t = p.nextToken();
        switch (name) {
          case "prompt_tokens" -> prompt = count(t);
          case "completion_tokens" -> completion = count(t);
          case "total_tokens" -> total = count(t);
          case "prompt_tokens_details" -> {
            if (t == JsonToken.VALUE_NULL) {
              details = null;
            } else {
              expect(t, JsonToken.START_OBJECT);
              details = readDetails();
            }
          }
          default -> extra = extra(extra, name);
        }
      }
      return new UsageInfo(prompt, completion, total, details, extra);
    }

    private PromptTokensDetails readDetails() throws IOException {
      Integer cached = null;
      Map<String, JsonNode> extra = null;
      Names seen = new Names();
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = seen.add(p.currentName());
        JsonToken t = p.nextToken();
        if (name.equals("cached_tokens")) {
          cached = count(t);
        } else {
          extra = extra(extra, name);
        }
      }
      return new PromptTokensDetails(cached, extra);
    }

    /** An {@code Integer} count: null, or an int. */
    private Integer count(JsonToken t) throws IOException {
      if (t == JsonToken.VALUE_NULL) {
        return null;
      }
      expect(t, JsonToken.VALUE_NUMBER_INT);
      if (p.getNumberType() != JsonParser.NumberType.INT) {
        throw new GiveUp();
      }
      return p.getIntValue();
    }

    /** {@code extra} with the value the parser stands on added as a JSON tree, as the records' any-setter keeps it. */
    private Map<String, JsonNode> extra(Map<String, JsonNode> extra, String name) throws IOException {
      Map<String, JsonNode> m = extra == null ? new LinkedHashMap<>() : extra;
      m.put(name, codec.readValue(p, JsonNode.class));
      return m;
    }

    /** Token ids: read, and copied unless null (left out, as the records write it); the ids, or null. */
    private TokenIds tokenIds(String name, JsonToken t) throws IOException {
      if (t == JsonToken.VALUE_NULL) {
        return null;
      }
      TokenIds ids = TokenIds.read(p);
      if (g != null) {
        g.writeFieldName(name);
        ids.writeTo(g);
      }
      return ids;
    }

    /** A modelled string: left out when null (as the records write it), refused when not a string. */
    private void string(String name, JsonToken t) throws IOException {
      if (t == JsonToken.VALUE_NULL) {
        return;
      }
      expect(t, JsonToken.VALUE_STRING);
      if (g != null) {
        g.writeFieldName(name);
        g.writeString(p.getText());
      }
    }

    /** A modelled {@code Integer} ({@code intOnly}) or {@code Long}: left out when null. */
    private void integer(String name, JsonToken t, boolean intOnly) throws IOException {
      if (t == JsonToken.VALUE_NULL) {
        return;
      }
      expect(t, JsonToken.VALUE_NUMBER_INT);
      JsonParser.NumberType type = p.getNumberType();
      if (type != JsonParser.NumberType.INT && (intOnly || type != JsonParser.NumberType.LONG)) {
        throw new GiveUp();
      }
      if (g != null) {
        g.writeFieldName(name);
        if (intOnly) {
          g.writeNumber(p.getIntValue());
        } else {
          g.writeNumber(p.getLongValue());
        }
      }
    }

    /** A field kept as it came (an unmodelled field, an opaque value): the name, then {@link #copyValue}. */
    private void copyField(String name) throws IOException {
      if (g != null) {
        g.writeFieldName(name);
      }
      copyValue();
    }

    /**
     * The value the parser stands on, as a {@code JsonNode} of the codec would write it: decimals exact (as
     * {@code BigDecimal}), integers as int, long or big integer.
     */
    private void copyValue() throws IOException {
      JsonToken t = p.currentToken();
      switch (t) {
        case START_OBJECT -> {
          if (g != null) {
            g.writeStartObject();
          }
          Names seen = new Names();
          while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = seen.add(p.currentName());
            if (g != null) {
              g.writeFieldName(name);
            }
            p.nextToken();
            copyValue();
          }
          if (g != null) {
            g.writeEndObject();
          }
        }
        case START_ARRAY -> {
          if (g != null) {
            g.writeStartArray();
          }
          while (p.nextToken() != JsonToken.END_ARRAY) {
            copyValue();
          }
          if (g != null) {
            g.writeEndArray();
          }
        }
        case VALUE_NUMBER_FLOAT -> {
          java.math.BigDecimal d = p.getDecimalValue(); // also where the records fail on a number out of range
          if (g != null) {
            g.writeNumber(d);
          }
        }
        default -> {
          if (g != null) {
            g.copyCurrentEvent(p);
          }
        }
      }
    }

    private static void expect(JsonToken got, JsonToken wanted) {
      if (got != wanted) {
        throw new GiveUp();
      }
    }
  }
}
