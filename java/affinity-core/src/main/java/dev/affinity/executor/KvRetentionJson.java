package dev.affinity.executor;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * {@link KvRetention} as JSON, in the field names of TensorRT-LLM's {@code KvCacheRetentionConfig} Python binding:
 * {@code {"token_range_retention_configs": [{"token_start": 0, "token_end": null, "priority": 80, "duration_ms":
 * 30000}], "decode_retention_priority": 35, "decode_duration_ms": null}} ({@code null}: no end, no duration). How an
 * Affinity frontend hands a leg's retention to an Affinity worker process ({@code x-affinity-kv-retention}); a
 * malformed value is an {@link IllegalArgumentException} naming the field.
 */
public final class KvRetentionJson {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final Set<String> TOP = Set.of("token_range_retention_configs", "decode_retention_priority",
      "decode_duration_ms");
  private static final Set<String> RANGE = Set.of("token_start", "token_end", "priority", "duration_ms");

  private KvRetentionJson() {}

  public static String toJson(KvRetention r) {
    ObjectNode root = MAPPER.createObjectNode();
    ArrayNode ranges = root.putArray("token_range_retention_configs");
    for (KvRetention.TokenRange t : r.ranges()) {
      ObjectNode o = ranges.addObject();
      o.put("token_start", t.start());
      if (t.end() == KvRetention.NONE) {
        o.putNull("token_end");
      } else {
        o.put("token_end", t.end());
      }
      o.put("priority", t.priority());
      if (t.durationMs() == KvRetention.NONE) {
        o.putNull("duration_ms");
      } else {
        o.put("duration_ms", t.durationMs());
      }
    }
    root.put("decode_retention_priority", r.decodePriority());
    if (r.decodeDurationMs() == KvRetention.NONE) {
      root.putNull("decode_duration_ms");
    } else {
      root.put("decode_duration_ms", r.decodeDurationMs());
    }
    return root.toString();
  }

  public static KvRetention parse(String json) {
    JsonNode root;
    try {
      root = MAPPER.readTree(json);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("kv_cache_retention_config is not JSON: " + e.getOriginalMessage());
    }
    if (root == null || !root.isObject()) {
      throw new IllegalArgumentException("kv_cache_retention_config must be a JSON object");
    }
    unknown(root, TOP, "kv_cache_retention_config");
    JsonNode ranges = root.get("token_range_retention_configs");
    if (ranges == null || !ranges.isArray()) {
      throw new IllegalArgumentException("kv_cache_retention_config.token_range_retention_configs must be an array");
    }
    List<KvRetention.TokenRange> out = new ArrayList<>();
    for (int i = 0; i < ranges.size(); i++) {
      JsonNode r = ranges.get(i);
      String path = "kv_cache_retention_config.token_range_retention_configs[" + i + "]";
      if (!r.isObject()) {
        throw new IllegalArgumentException(path + " must be an object");
      }
      unknown(r, RANGE, path);
      out.add(withPath(path, () -> new KvRetention.TokenRange(integer(r, "token_start", path, false),
          integer(r, "token_end", path, true), integer(r, "priority", path, false), duration(r, "duration_ms", path))));
    }
    String path = "kv_cache_retention_config";
    int decode = root.has("decode_retention_priority") ? integer(root, "decode_retention_priority", path, false)
        : KvRetention.DEFAULT_PRIORITY;
    return withPath(path, () -> new KvRetention(out, decode, duration(root, "decode_duration_ms", path)));
  }

  private static <T> T withPath(String path, java.util.function.Supplier<T> make) {
    try {
      return make.get();
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(path + ": " + e.getMessage());
    }
  }

  private static void unknown(JsonNode o, Set<String> known, String path) {
    o.fieldNames().forEachRemaining(f -> {
      if (!known.contains(f)) {
        throw new IllegalArgumentException(path + "." + f + " is not a field of KvCacheRetentionConfig");
      }
    });
  }

  private static int integer(JsonNode o, String field, String path, boolean nullable) {
    JsonNode v = o.get(field);
    if ((v == null || v.isNull()) && nullable) {
      return KvRetention.NONE;
    }
    if (v == null || !v.isIntegralNumber() || !v.canConvertToInt()) {
      throw new IllegalArgumentException(path + "." + field + " must be an integer" + (nullable ? " or null" : ""));
    }
    return v.intValue();
  }

  private static long duration(JsonNode o, String field, String path) {
    JsonNode v = o.get(field);
    if (v == null || v.isNull()) {
      return KvRetention.NONE;
    }
    if (!v.isIntegralNumber() || !v.canConvertToLong() || v.longValue() < 0) {
      throw new IllegalArgumentException(path + "." + field + " must be a number of milliseconds >= 0 or null");
    }
    return v.longValue();
  }
}
