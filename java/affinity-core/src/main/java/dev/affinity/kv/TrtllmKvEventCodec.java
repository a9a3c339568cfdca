package dev.affinity.kv;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.executor.KvEvent;
import dev.affinity.executor.KvEventType;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;

/**
 * TensorRT-LLM's {@code POST /kv_cache_events} JSON (served by {@code tensorrt_llm/serve/openai_server.py}, read by {@code KvCacheAwareRouter} in {@code router.py}): a list of
 * {@code {"event_id", "data": {...}, "window_size", ["attention_dp_rank"], ["hash_algo"]}} with data
 * types created / stored / removed / updated. Block hashes are unsigned 64-bit integers (v1,
 * v2_sha256_64) or hex strings (v2_sha256); both become 64-bit index keys.
 */
public final class TrtllmKvEventCodec {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  private TrtllmKvEventCodec() {}

  /** Parses a response body; throws IllegalArgumentException naming the bad element. */
  public static List<KvEvent> parse(JsonNode root) {
    if (root == null || !root.isArray()) {
      throw new IllegalArgumentException("kv_cache_events: expected a JSON array, found "
          + (root == null ? "nothing" : root.getNodeType()));
    }
    List<KvEvent> out = new ArrayList<>(root.size());
    for (int i = 0; i < root.size(); i++) {
      JsonNode ev = root.get(i);
      String at = "kv_cache_events[" + i + "]";
      JsonNode data = ev.get("data");
      if (data == null || !data.isObject() || !data.path("type").isTextual()) {
        throw new IllegalArgumentException(at + ".data: expected an object with a type");
      }
      long id = ev.path("event_id").asLong();
      int window = ev.path("window_size").asInt(0);
      int rank = ev.path("attention_dp_rank").asInt(0);
      String type = data.get("type").asText();
      switch (type) {
        case "created" -> {
          long blocks = 0;
          for (JsonNode n : data.path("num_blocks_per_cache_level")) {
            blocks += n.asLong();
          }
          out.add(new KvEvent(id, KvEventType.CREATED, rank, window, false, 0, null, null, blocks, 0));
        }
        case "stored" -> {
          JsonNode blocks = data.path("blocks");
          long[] hashes = new long[blocks.size()];
          List<Integer> tokens = new ArrayList<>();
          for (int b = 0; b < blocks.size(); b++) {
            hashes[b] = key(blocks.get(b).get("block_hash"), at + ".data.blocks[" + b + "].block_hash");
            for (JsonNode t : blocks.get(b).path("tokens")) {
              tokens.add(t.isObject() ? t.path("token_id").asInt() : t.asInt());
            }
          }
          JsonNode parent = data.get("parent_hash");
          boolean hasParent = parent != null && !parent.isNull();
          out.add(new KvEvent(id, KvEventType.STORED, rank, window, hasParent,
              hasParent ? key(parent, at + ".data.parent_hash") : 0, hashes,
              tokens.stream().mapToInt(Integer::intValue).toArray(), 0, 0));
        }
        case "removed" -> {
          JsonNode list = data.path("block_hashes");
          long[] hashes = new long[list.size()];
          for (int b = 0; b < list.size(); b++) {
            hashes[b] = key(list.get(b), at + ".data.block_hashes[" + b + "]");
          }
          out.add(new KvEvent(id, KvEventType.REMOVED, rank, window, false, 0, hashes, null, 0, 0));
        }
        case "updated" -> {
          long h = key(data.get("block_hash"), at + ".data.block_hash");
          JsonNode prio = data.path("priority");
          long p = prio.isObject() ? prio.path("new_value").asLong() : prio.asLong();
          out.add(new KvEvent(id, KvEventType.UPDATED, rank, window, false, 0, new long[] {h}, null, p, 0));
        }
        default -> throw new IllegalArgumentException(at + ".data.type: unknown event type \"" + type + "\"");
      }
    }
    return out;
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
