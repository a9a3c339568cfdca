package dev.affinity.kv;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.executor.KvEvent;
import dev.affinity.executor.KvEventType;
import java.io.IOException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import java.util.stream.LongStream;

/**
 * TensorRT-LLM's {@code POST /kv_cache_events} JSON (served by {@code tensorrt_llm/serve/openai_server.py}, read by {@code KvCacheAwareRouter} in {@code router.py}): a list of
 * {@code {"event_id", "data": {...}, "window_size", ["attention_dp_rank"], ["hash_algo"]}} with data
 * types created / stored / removed / updated. Block hashes are unsigned 64-bit integers (v1,
 * v2_sha256_64) or hex strings (v2_sha256); both become 64-bit index keys.
 */
public final class TrtllmKvEventCodec {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  private TrtllmKvEventCodec() {}

  /** Reads its parsers: no features beyond Jackson's defaults, as the protocol codec's tree reading had. */
  private static final ObjectMapper MAPPER = new ObjectMapper();

  /**
   * Parses a response body as it arrived, token by token: a 176k-token prefill's events name each of its tokens as an
   * object ({@code {"type": "unique_token", "token_id": 5, "token_extra_id": 0}}), about 10 MB of JSON that a tree took
   * 100-300 ms of the frontend's CPU to build and walk (docs/benchmarks.md, "Agent turns: leg bodies from a pool,
   * history kept in pieces"). Throws IllegalArgumentException naming the bad element.
   */
  public static List<KvEvent> parse(byte[] body) {
    try (JsonParser p = MAPPER.createParser(body)) {
      List<KvEvent> events = parse(p);
      if (p.nextToken() != null) {
        throw new IllegalArgumentException("kv_cache_events: more than one JSON value");
      }
      return events;
    } catch (IOException e) {
      throw new IllegalArgumentException("kv_cache_events: not JSON: " + (e instanceof
          com.fasterxml.jackson.core.JsonProcessingException j ? j.getOriginalMessage() : e.getMessage()), e);
    }
  }

  /** Parses a response body already read as a tree; throws IllegalArgumentException naming the bad element. */
  public static List<KvEvent> parse(JsonNode root) {
    if (root == null || !root.isArray()) {
      throw new IllegalArgumentException("kv_cache_events: expected a JSON array, found "
          + (root == null ? "nothing" : root.getNodeType()));
    }
    try (JsonParser p = root.traverse(MAPPER)) {
      return parse(p);
    } catch (IOException e) {
      throw new IllegalArgumentException("kv_cache_events: " + e.getMessage(), e);
    }
  }

  private static List<KvEvent> parse(JsonParser p) throws IOException {
    JsonToken t = p.nextToken();
    if (t != JsonToken.START_ARRAY) {
      throw new IllegalArgumentException("kv_cache_events: expected a JSON array, found "
          + (t == null ? "nothing" : t.asString() == null ? t.name() : t.asString()));
    }
    List<KvEvent> out = new ArrayList<>();
    for (int i = 0; p.nextToken() != JsonToken.END_ARRAY; i++) {
      String at = "kv_cache_events[" + i + "]";
      if (!p.isExpectedStartObjectToken()) {
        throw new IllegalArgumentException(at + ".data: expected an object with a type");
      }
      long id = 0;
      int window = 0;
      int rank = 0;
      Data data = null;
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        p.nextToken();
        switch (name) {
          case "event_id" -> id = asLong(p);
          case "window_size" -> window = (int) asLong(p);
          case "attention_dp_rank" -> rank = (int) asLong(p);
          case "data" -> data = p.isExpectedStartObjectToken() ? Data.read(p, at) : skip(p);
          default -> p.skipChildren();
        }
      }
      if (data == null || data.type == null) {
        throw new IllegalArgumentException(at + ".data: expected an object with a type");
      }
      out.add(data.event(id, rank, window, at));
    }
    return out;
  }

  /** {@code JsonNode.asLong()} of the current value: a number's, a numeric string's, else 0; a structure skipped. */
  private static long asLong(JsonParser p) throws IOException {
    if (p.currentToken().isStructStart()) {
      p.skipChildren();
      return 0;
    }
    return p.getValueAsLong(0);
  }

  /**
   * Moves to the next value of the array or object the parser is in (an object's values, as a tree's iteration gives
   * them); false at its end.
   */
  private static boolean nextValue(JsonParser p) throws IOException {
    JsonToken t = p.nextToken();
    if (t == JsonToken.FIELD_NAME) {
      t = p.nextToken();
    }
    return !t.isStructEnd();
  }

  private static Data skip(JsonParser p) throws IOException {
    p.skipChildren();
    return null;
  }

  /**
   * An event's {@code data}, read before its {@code type} is known (it may come last): every field an event type reads,
   * with the first error each would raise, raised only for the type that reads that field.
   */
  private static final class Data {
    String type;
    long blocksPerLevel;
    LongStream.Builder storedHashes = LongStream.builder();
    IntStream.Builder tokens = IntStream.builder();
    String storedError;
    boolean hasParent;
    long parent;
    String parentError;
    LongStream.Builder removedHashes = LongStream.builder();
    String removedError;
    boolean hasBlockHash;
    long blockHash;
    String blockHashError;
    long priority;

    static Data read(JsonParser p, String at) throws IOException {
      Data d = new Data();
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        JsonToken v = p.nextToken();
        switch (name) {
          case "type" -> {
            d.type = v == JsonToken.VALUE_STRING ? p.getText() : null;
            p.skipChildren();
          }
          case "num_blocks_per_cache_level" -> {
            d.blocksPerLevel = 0;
            while (v.isStructStart() && nextValue(p)) {
              d.blocksPerLevel += asLong(p);
            }
          }
          case "blocks" -> d.readBlocks(p, at);
          case "parent_hash" -> {
            d.hasParent = v != JsonToken.VALUE_NULL;
            d.parentError = null;
            if (d.hasParent) {
              try {
                d.parent = key(p, at + ".data.parent_hash");
              } catch (IllegalArgumentException e) {
                d.parentError = e.getMessage();
              }
            }
          }
          case "block_hashes" -> {
            d.removedHashes = LongStream.builder();
            d.removedError = null;
            if (v == JsonToken.START_ARRAY) {
              for (int b = 0; p.nextToken() != JsonToken.END_ARRAY; b++) {
                try {
                  d.removedHashes.add(key(p, at + ".data.block_hashes[" + b + "]"));
                } catch (IllegalArgumentException e) {
                  d.removedError = d.removedError == null ? e.getMessage() : d.removedError;
                }
              }
            } else {
              p.skipChildren();
            }
          }
          case "block_hash" -> {
            d.hasBlockHash = true;
            d.blockHashError = null;
            try {
              d.blockHash = key(p, at + ".data.block_hash");
            } catch (IllegalArgumentException e) {
              d.blockHashError = e.getMessage();
            }
          }
          case "priority" -> {
            d.priority = 0;
            if (v == JsonToken.START_OBJECT) {
              while (p.nextToken() == JsonToken.FIELD_NAME) {
                String f = p.currentName();
                p.nextToken();
                if (f.equals("new_value")) {
                  d.priority = asLong(p);
                } else {
                  p.skipChildren();
                }
              }
            } else {
              d.priority = asLong(p);
            }
          }
          default -> p.skipChildren();
        }
      }
      return d;
    }

    private void readBlocks(JsonParser p, String at) throws IOException {
      storedHashes = LongStream.builder();
      tokens = IntStream.builder();
      storedError = null;
      if (p.currentToken() != JsonToken.START_ARRAY) {
        p.skipChildren();
        return;
      }
      for (int b = 0; p.nextToken() != JsonToken.END_ARRAY; b++) {
        String where = at + ".data.blocks[" + b + "].block_hash";
        if (p.currentToken() != JsonToken.START_OBJECT) {
          p.skipChildren();
          storedError = storedError == null ? where + ": missing" : storedError;
          continue;
        }
        boolean hashed = false;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
          String name = p.currentName();
          JsonToken v = p.nextToken();
          if (name.equals("block_hash")) {
            hashed = true;
            try {
              storedHashes.add(key(p, where));
            } catch (IllegalArgumentException e) {
              storedError = storedError == null ? e.getMessage() : storedError;
            }
          } else if (name.equals("tokens") && v.isStructStart()) {
            while (nextValue(p)) {
              tokens.add(p.currentToken() == JsonToken.START_OBJECT ? tokenId(p) : (int) asLong(p));
            }
          } else {
            p.skipChildren();
          }
        }
        if (!hashed) {
          storedError = storedError == null ? where + ": missing" : storedError;
        }
      }
    }

    /** A token object's {@code token_id} ({@code JsonNode.path("token_id").asInt()}). */
    private static int tokenId(JsonParser p) throws IOException {
      int id = 0;
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        p.nextToken();
        if (name.equals("token_id")) {
          id = (int) asLong(p);
        } else {
          p.skipChildren();
        }
      }
      return id;
    }

    KvEvent event(long id, int rank, int window, String at) {
      switch (type) {
        case "created" -> {
          return new KvEvent(id, KvEventType.CREATED, rank, window, false, 0, null, null, blocksPerLevel, 0);
        }
        case "stored" -> {
          if (storedError != null) {
            throw new IllegalArgumentException(storedError);
          }
          if (parentError != null) {
            throw new IllegalArgumentException(parentError);
          }
          return new KvEvent(id, KvEventType.STORED, rank, window, hasParent, hasParent ? parent : 0,
              storedHashes.build().toArray(), tokens.build().toArray(), 0, 0);
        }
        case "removed" -> {
          if (removedError != null) {
            throw new IllegalArgumentException(removedError);
          }
          return new KvEvent(id, KvEventType.REMOVED, rank, window, false, 0, removedHashes.build().toArray(), null, 0,
              0);
        }
        case "updated" -> {
          if (!hasBlockHash) {
            throw new IllegalArgumentException(at + ".data.block_hash: missing");
          }
          if (blockHashError != null) {
            throw new IllegalArgumentException(blockHashError);
          }
          return new KvEvent(id, KvEventType.UPDATED, rank, window, false, 0, new long[] {blockHash}, null, priority,
              0);
        }
        default -> throw new IllegalArgumentException(at + ".data.type: unknown event type \"" + type + "\"");
      }
    }
  }

  /** The current value as a block key (as {@link #key(JsonNode, String)}); a structure is skipped and refused. */
  private static long key(JsonParser p, String at) throws IOException {
    JsonToken t = p.currentToken();
    if (t == JsonToken.VALUE_STRING || t == JsonToken.VALUE_NUMBER_INT || t == JsonToken.VALUE_NULL) {
      return key(t == JsonToken.VALUE_NULL ? null : t == JsonToken.VALUE_STRING ? F.textNode(p.getText())
          : p.getNumberType() == JsonParser.NumberType.BIG_INTEGER ? F.numberNode(p.getBigIntegerValue())
          : F.numberNode(p.getLongValue()), at);
    }
    if (t.isStructStart()) {
      p.skipChildren();
      throw new IllegalArgumentException(at + ": expected a block hash, found " + (t == JsonToken.START_OBJECT
          ? "an object" : "an array"));
    }
    throw new IllegalArgumentException(at + ": expected a block hash, found " + p.getText());
  }

  static long key(JsonNode n, String at) {
    if (n == null || n.isNull()) {
      throw new IllegalArgumentException(at + ": missing");
    }
    if (n.isTextual()) {
      String s = n.asText();
      if (s.length() == 64) {
        return BlockHasher.keyOfHex(s);
      }
      try {
        return Long.parseUnsignedLong(s);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(at + ": expected a block hash, found \"" + s + "\"");
      }
    }
    if (n.isInt() || n.isLong()) {
      long v = n.longValue();
      if (v < 0) {
        throw new IllegalArgumentException(at + ": " + v + " is not an unsigned 64-bit hash");
      }
      return v;
    }
    if (n.isIntegralNumber()) {
      BigInteger v = n.bigIntegerValue();
      if (v.signum() < 0 || v.bitLength() > 64) {
        throw new IllegalArgumentException(at + ": " + v + " is not an unsigned 64-bit hash");
      }
      return v.longValue();
    }
    throw new IllegalArgumentException(at + ": expected a block hash, found " + n);
  }

  /** An unsigned 64-bit hash as a JSON number: a long node below 2^63, a big integer only above. */
  private static JsonNode unsigned(long hash) {
    return hash >= 0 ? F.numberNode(hash) : F.numberNode(new BigInteger(Long.toUnsignedString(hash)));
  }

  /** Serializes events in TensorRT-LLM's shape (hashes as unsigned integers). */
  public static ArrayNode toJson(List<KvEvent> events, int tokensPerBlock) {
    ArrayNode arr = F.arrayNode();
    for (KvEvent e : events) {
      ObjectNode ev = arr.addObject();
      ev.put("event_id", e.eventId());
      ObjectNode data = ev.putObject("data");
      data.put("type", e.type().wireName());
      switch (e.type()) {
        case CREATED -> data.putArray("num_blocks_per_cache_level").add(e.value());
        case STORED -> {
          if (e.hasParent()) {
            data.set("parent_hash", unsigned(e.parentHash()));
          } else {
            data.putNull("parent_hash");
          }
          ArrayNode blocks = data.putArray("blocks");
          long[] hashes = e.blockHashes();
          int[] tokens = e.tokens();
          for (int b = 0; b < hashes.length; b++) {
            ObjectNode blk = blocks.addObject();
            blk.put("type", "stored_block");
            blk.set("block_hash", unsigned(hashes[b]));
            ArrayNode toks = blk.putArray("tokens");
            for (int t = b * tokensPerBlock; t < (b + 1) * tokensPerBlock && t < tokens.length; t++) {
              ObjectNode tok = toks.addObject();
              tok.put("type", "unique_token");
              tok.put("token_id", tokens[t]);
              tok.put("token_extra_id", 0);
            }
            blk.putNull("lora_id");
            blk.put("cache_level", 0);
            blk.put("priority", 35);
          }
        }
        case REMOVED -> {
          ArrayNode hs = data.putArray("block_hashes");
          for (long h : e.blockHashes()) {
            hs.add(unsigned(h));
          }
        }
        case UPDATED -> {
          data.set("block_hash", unsigned(e.blockHashes()[0]));
          data.putNull("cache_level");
          data.putObject("priority").put("old_value", 35).put("new_value", e.value());
        }
      }
      ev.put("window_size", e.windowSize());
      ev.put("attention_dp_rank", e.rank());
    }
    return arr;
  }
}
