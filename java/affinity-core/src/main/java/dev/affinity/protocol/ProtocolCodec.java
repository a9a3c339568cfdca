package dev.affinity.protocol;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.exc.InputCoercionException;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.core.exc.StreamReadException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.ObjectWriter;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.cfg.JsonNodeFeature;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.type.LogicalType;
import com.fasterxml.jackson.module.blackbird.BlackbirdModule;
import java.io.IOException;
import java.io.OutputStream;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads and writes the protocol types. Thread-safe. Every codec of the JVM reads and writes through one configured
 * {@link ObjectMapper}: its (de)serializers, and the accessor classes Blackbird generates for them, are made once and
 * compiled once, so that a frontend started after the warm-up's copy of the request path (WarmUp) runs on code the
 * JIT has compiled already (a mapper per codec left about 40 generated accessors and Jackson's introspection to be
 * compiled during the real frontend's first requests).
 *
 * <p>Parsing is strict about JSON types (no string-to-number or number-to-string coercion, no floats
 * for integers, nothing after the top-level value) and turns every failure into a {@link ProtocolException}: status 400
 * for client bodies ({@code parse...Request}, {@link #parse}) and 502 for worker bodies
 * ({@code parse...Response}, {@code parse...Chunk}). The exception names the JSON path of the offending
 * field; malformed JSON reports line, column and byte offset. Floating-point numbers in unmodelled fields
 * are kept as exact decimals, so forwarding does not change them. Output is compact JSON.
 */
public final class ProtocolCodec {

  private static final Logger LOG = LoggerFactory.getLogger(ProtocolCodec.class);

  private static final ObjectMapper SHARED = newMapper();
  private static final ObjectWriter WRITER = SHARED.writer();
  private static final ObjectReader TREE_READER = SHARED.readerFor(JsonNode.class);
  /** A reader per type, so that a parse does not resolve the type and its root deserializer again. */
  private static final ClassValue<ObjectReader> READERS = new ClassValue<>() {
    @Override
    protected ObjectReader computeValue(Class<?> type) {
      return SHARED.readerFor(type);
    }
  };

  public ProtocolCodec() {}

  /** The one mapper, for tests that look at the (de)serializers it resolves. */
  static ObjectMapper sharedMapper() {
    return SHARED;
  }

  private static ObjectMapper newMapper() {
    JsonMapper m = JsonMapper.builder()
        .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS)
        .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
        .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
        .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
        .configure(JsonNodeFeature.STRIP_TRAILING_BIGDECIMAL_ZEROES, false)
        .disable(StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION)
        .disable(SerializationFeature.INDENT_OUTPUT)
        .disable(SerializationFeature.FAIL_ON_EMPTY_BEANS)
        // generated accessors and constructors instead of reflective calls (per-request (de)serialization cost)
        .addModule(new BlackbirdModule())
        .build();
    m.coercionConfigFor(LogicalType.Textual)
        .setCoercion(CoercionInputShape.Integer, CoercionAction.Fail)
        .setCoercion(CoercionInputShape.Float, CoercionAction.Fail)
        .setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail);
    m.coercionConfigDefaults().setAcceptBlankAsEmpty(false);
    return m;
  }

  // ---- client bodies (400) ----

  /** A {@code /v1/completions} body. */
  public CompletionRequest parseCompletionRequest(byte[] body) throws ProtocolException {
    return read(body, CompletionRequest.class, ProtocolException.BAD_REQUEST);
  }

  /** A {@code /v1/chat/completions} body. */
  public ChatCompletionRequest parseChatCompletionRequest(byte[] body) throws ProtocolException {
    return read(body, ChatCompletionRequest.class, ProtocolException.BAD_REQUEST);
  }

  /**
   * A {@code /v1/chat/completions} body whose request is kept beyond the body (a conversation's last turn,
   * {@code dev.affinity.admission.KeptTurns}): each message text's spelling ({@link JsonString}) is copied out of the
   * body, so that the request does not hold the body's bytes.
   */
  public ChatCompletionRequest parseKeptChatRequest(byte[] body) throws ProtocolException {
    return read(body, ChatCompletionRequest.class, ProtocolException.BAD_REQUEST, true);
  }

  /**
   * A chat request from a JSON tree already built and checked as text (an Anthropic Messages or Responses body
   * converted to a chat request): read from the tree, with no bytes written and parsed again in between; errors are
   * 400 naming the field, as {@link #parseChatCompletionRequest(byte[])}'s.
   */
  public ChatCompletionRequest parseChatCompletionRequest(JsonNode tree) throws ProtocolException {
    return read(() -> SHARED.treeAsTokens(tree), READERS.get(ChatCompletionRequest.class),
        ProtocolException.BAD_REQUEST, (parser, value) -> { });
  }

  /** Any protocol type from a client-side body (errors are 400). */
  public <T> T parse(byte[] body, Class<T> type) throws ProtocolException {
    return read(body, type, ProtocolException.BAD_REQUEST);
  }

  /** A JSON tree, parsed with the codec's number handling (exact decimals); errors are 400. */
  public JsonNode readTree(byte[] body) throws ProtocolException {
    return read(body, JsonNode.class, ProtocolException.BAD_REQUEST);
  }

  // ---- worker bodies (502) ----

  public CompletionResponse parseCompletionResponse(byte[] body) throws ProtocolException {
    return read(body, CompletionResponse.class, ProtocolException.BAD_GATEWAY);
  }

  public ChatCompletionResponse parseChatCompletionResponse(byte[] body) throws ProtocolException {
    return read(body, ChatCompletionResponse.class, ProtocolException.BAD_GATEWAY);
  }

  /** The JSON payload of one {@code data:} line of a completion stream. */
  public CompletionStreamResponse parseCompletionStreamChunk(byte[] body) throws ProtocolException {
    return read(body, CompletionStreamResponse.class, ProtocolException.BAD_GATEWAY);
  }

  /** The JSON payload of one {@code data:} line of a chat completion stream. */
  public ChatCompletionStreamResponse parseChatCompletionStreamChunk(byte[] body) throws ProtocolException {
    return read(body, ChatCompletionStreamResponse.class, ProtocolException.BAD_GATEWAY);
  }

  /**
   * One pass over a worker's whole answer instead of a parse into records ({@link ResponseScan}): what the
   * orchestration reads of it, and with {@code relay} the JSON a client gets, copied token by token. Null when the
   * pass gives up on the answer: parse it with {@link #parseCompletionResponse} or
   * {@link #parseChatCompletionResponse} then, which also names the error if it is not a valid answer.
   */
  public ResponseScan scanResponse(byte[] body, boolean chat, boolean relay) {
    return scanResponse(body, chat, relay, null);
  }

  /**
   * {@link #scanResponse(byte[], boolean, boolean)} of the answer to a leg that sent its prompt as {@code sent} (null:
   * as text): an answer that is not relayed has its {@code prompt_token_ids} (or {@code prompt_token_ids_b64}) skipped,
   * and what the leg sent stands for them ({@link ResponseScan#promptTokenIds()}, {@link ResponseScan#promptTokenIdsB64()}).
   */
  public ResponseScan scanResponse(byte[] body, boolean chat, boolean relay, SentPrompt sent) {
    return ResponseScan.scan(this, body, chat, relay, sent);
  }

  /** A parser with the codec's settings (limits, number handling). */
  JsonParser createParser(byte[] body) throws IOException {
    return SHARED.createParser(body);
  }

  /** A UTF-8 generator with the codec's settings, as {@link #toJsonBytes} writes. */
  JsonGenerator createGenerator(OutputStream out) throws IOException {
    return SHARED.createGenerator(out, JsonEncoding.UTF8);
  }

  /** The value the parser stands on, read as {@code type} with the codec's rules (the parser stops on its end). */
  <T> T readValue(JsonParser parser, Class<T> type) throws IOException {
    return READERS.get(type).readValue(parser);
  }

  // ---- writing ----

  /** {@link #toJsonBytes}'s bytes, written to {@code out}. */
  public void writeJson(Object value, java.io.OutputStream out) throws IOException {
    WRITER.writeValue(out, value);
  }

  /** Compact UTF-8 JSON of a protocol object (for a worker or a client). */
  public byte[] toJsonBytes(Object value) {
    try {
      return WRITER.writeValueAsBytes(value);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot serialize " + value.getClass().getSimpleName(), e);
    }
  }

  /** Compact JSON text of a protocol object. */
  public String toJsonString(Object value) {
    return new String(toJsonBytes(value), StandardCharsets.UTF_8);
  }

  /** The JSON tree a protocol object serializes to. */
  public JsonNode toTree(Object value) {
    return SHARED.valueToTree(value);
  }

  // ---- error mapping ----

  private <T> T read(byte[] body, Class<T> type, int status) {
    return read(body, type, status, false);
  }

  private <T> T read(byte[] body, Class<T> type, int status, boolean ownSpellings) {
    if (body == null || isBlank(body)) {
      throw ProtocolException.of(status, "body is empty; expected a JSON object", null);
    }
    boolean clientText = status == ProtocolException.BAD_REQUEST && LoneSurrogates.mayContain(body);
    if (clientText && type != JsonNode.class) {
      read(body, JsonNode.class, status);  // names the field of a lone surrogate, in the body's own terms
    }
    // a client's strings keep their spelling in the body, to be written to the legs as they were (JsonString)
    ObjectReader reader = status == ProtocolException.BAD_REQUEST
        ? READERS.get(type).withAttribute(JsonString.SOURCE, body) : READERS.get(type);
    if (ownSpellings) {
      reader = reader.withAttribute(JsonString.OWN, Boolean.TRUE);
    }
    return read(() -> SHARED.createParser(body), reader, status, (parser, value) -> {
      if (clientText && value instanceof JsonNode tree) {
        LoneSurrogates.check(tree);
      }
      if (parser.nextToken() != null) {
        JsonLocation at = parser.currentTokenLocation();
        throw ProtocolException.malformed(status, "malformed JSON: unexpected content after the top-level value"
                + " (at line " + at.getLineNr() + ", column " + at.getColumnNr() + ", byte offset "
                + at.getByteOffset() + ")", at.getLineNr(), at.getColumnNr(), at.getByteOffset(), null);
      }
    });
  }

  /** Where a value is read from: a body's bytes, or a tree already built. */
  private interface ParserSource {
    JsonParser open() throws IOException;
  }

  /** What is checked of a value once read, on the parser that read it (for a body: nothing may follow it). */
  private interface ReadCheck<T> {
    void check(JsonParser parser, T value) throws IOException;
  }

  /** One value read by {@code reader} from {@code source}; every error a {@link ProtocolException} of {@code status}. */
  private <T> T read(ParserSource source, ObjectReader reader, int status, ReadCheck<T> after) {
    JsonParser parser = null;
    Class<?> type = reader.getValueType().getRawClass();
    try {
      parser = source.open();
      T value = reader.readValue(parser);
      if (value == null) {
        throw ProtocolException.of(status, "body must be a JSON object but is null", null);
      }
      after.check(parser, value);
      return value;
    } catch (ProtocolException e) {
      throw e.withStatus(status);
    } catch (Exception e) {
      // the parser still stands on the offending token
      ProtocolException pe = translate(e, type, status, parser == null ? null : parser.currentToken());
      LOG.debug("rejected {} body: {}", type.getSimpleName(), pe.getMessage());
      throw pe;
    } finally {
      closeQuietly(parser);
    }
  }

  private static void closeQuietly(JsonParser parser) {
    if (parser != null) {
      try {
        parser.close();
      } catch (IOException ignored) {
        // reading from a byte array
      }
    }
  }

  private static boolean isBlank(byte[] body) {
    for (byte b : body) {
      if (b != ' ' && b != '\t' && b != '\n' && b != '\r') {
        return false;
      }
    }
    return true;
  }

  /** Maps any parse failure to a {@link ProtocolException} with the field path. */
  static ProtocolException translate(Exception e, Class<?> rootType, int status, JsonToken got) {
    String path = e instanceof JsonMappingException jme ? path(jme.getPath()) : null;

    ProtocolException cause = find(e, ProtocolException.class);
    if (cause != null) {
      return cause.withFieldPrefix(path).withStatus(status);
    }
    StreamConstraintsException limit = find(e, StreamConstraintsException.class);
    if (limit != null) {
      return located(status, "body exceeds parser limits: " + limit.getOriginalMessage(), limit);
    }
    InputCoercionException range = find(e, InputCoercionException.class);
    if (range != null) {
      return ProtocolException.invalidField(path, "number " + text(range.getProcessor())
          + " is out of range for " + rangeOf(range.getTargetType()), e).withStatus(status);
    }
    NumberFormatException number = find(e, NumberFormatException.class);
    if (number != null) { // e.g. a decimal whose exponent does not fit BigDecimal
      return ProtocolException.invalidField(path, "number is out of range", e).withStatus(status);
    }
    StreamReadException syntax = find(e, StreamReadException.class);
    if (syntax != null) {
      return located(status, "malformed JSON: " + syntax.getOriginalMessage(), syntax);
    }
    if (e instanceof MismatchedInputException mie) {
      if (path == null || path.isEmpty()) {
        return ProtocolException.of(status, "body must be a JSON object but is " + Json.describe(got), e);
      }
      return ProtocolException.invalidField(path,
          "expected " + expected(mie.getTargetType()) + " but got " + Json.describe(got), e).withStatus(status);
    }
    if (e instanceof JsonMappingException jme) {
      return ProtocolException.invalidField(path, "invalid value: " + jme.getOriginalMessage(), e)
          .withStatus(status);
    }
    if (e instanceof IOException) {
      return ProtocolException.of(status, "body is not valid UTF-8 JSON: " + e.getMessage(), e);
    }
    LOG.warn("unexpected failure parsing {}", rootType.getSimpleName(), e);
    return ProtocolException.of(status, "body could not be parsed", e);
  }

  private static ProtocolException located(int status, String detail, JsonProcessingException e) {
    JsonLocation loc = e.getLocation();
    if (loc == null || loc.getLineNr() < 0) {
      return ProtocolException.malformed(status, detail, -1, -1, -1, e);
    }
    long line = loc.getLineNr();
    long column = loc.getColumnNr();
    long offset = loc.getByteOffset() >= 0 ? loc.getByteOffset() : loc.getCharOffset();
    return ProtocolException.malformed(status,
        detail + " (at line " + line + ", column " + column + ", byte offset " + offset + ")",
        line, column, offset, e);
  }

  /** {@code messages[2].content} from Jackson's reference chain. */
  static String path(List<JsonMappingException.Reference> refs) {
    StringBuilder sb = new StringBuilder();
    for (JsonMappingException.Reference ref : refs) {
      if (ref.getFieldName() != null) {
        if (sb.length() > 0) {
          sb.append('.');
        }
        sb.append(ref.getFieldName());
      } else if (ref.getIndex() >= 0) {
        sb.append('[').append(ref.getIndex()).append(']');
      }
    }
    return sb.toString();
  }

  private static <X extends Throwable> X find(Throwable t, Class<X> type) {
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (type.isInstance(c)) {
        return type.cast(c);
      }
    }
    return null;
  }

  private static String text(Object processor) {
    try {
      return processor instanceof JsonParser p ? p.getText() : "";
    } catch (IOException e) {
      return "";
    }
  }

  private static String rangeOf(Class<?> target) {
    if (target == Integer.TYPE || target == Integer.class) {
      return "a 32-bit integer";
    }
    if (target == Long.TYPE || target == Long.class) {
      return "a 64-bit integer";
    }
    return "this field";
  }

  /** What a Java target type is called in JSON. */
  private static String expected(Class<?> target) {
    if (target == null) {
      return "another type";
    }
    if (target == Integer.class || target == Integer.TYPE || target == Long.class || target == Long.TYPE
        || target == Short.class || target == BigInteger.class) {
      return "an integer";
    }
    if (target == Double.class || target == Double.TYPE || target == Float.class || target == BigDecimal.class) {
      return "a number";
    }
    if (target == Boolean.class || target == Boolean.TYPE) {
      return "a boolean";
    }
    if (target == String.class) {
      return "a string";
    }
    if (Collection.class.isAssignableFrom(target) || target.isArray()) {
      return "an array";
    }
    if (Map.class.isAssignableFrom(target) || target.isRecord() || !target.getName().startsWith("java.")) {
      return "an object";
    }
    return "a " + target.getSimpleName();
  }
}
