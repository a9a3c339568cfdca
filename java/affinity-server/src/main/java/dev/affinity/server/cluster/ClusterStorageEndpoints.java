package dev.affinity.server.cluster;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.server.http.ExtraEndpoint;
import java.io.IOException;
import java.net.InetAddress;
import java.util.Map;

/**
 * The HTTP side of {@link InMemoryClusterStorage}, mounted on the frontend's own port as upstream's
 * {@code HttpClusterStorageServer} mounts it: {@code POST /set}, {@code GET /get}, {@code DELETE /delete},
 * {@code GET /expire}, {@code GET /get_prefix}. Every answer is {@code {"result": ...}}, 400 when the result
 * is false or null and 200 otherwise (an empty string or map is 200, as upstream's newest rule). A body or
 * query that is not what the contract says gets 400 with an error naming the field; a client that is not on
 * this host gets 403 (the storage has no authentication: loopback only).
 */
public final class ClusterStorageEndpoints {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final InMemoryClusterStorage storage;

  public ClusterStorageEndpoints(InMemoryClusterStorage storage) {
    this.storage = storage;
  }

  /** The five routes, by path. */
  public Map<String, ExtraEndpoint> endpoints() {
    return Map.of(
        "/set", new ExtraEndpoint("POST", false, r -> {
          checkLoopback(r.client());
          return answer(r, set(r.body()));
        }),
        "/get", new ExtraEndpoint("GET", false, r -> answer(r, storage.get(required(r, "key")).orElse(null))),
        "/delete", new ExtraEndpoint("DELETE", false, r -> answer(r, storage.delete(required(r, "key")))),
        "/expire", new ExtraEndpoint("GET", false,
            r -> answer(r, storage.expire(required(r, "key"), integer(required(r, "ttl"), "ttl")))),
        "/get_prefix", new ExtraEndpoint("GET", false, r -> answer(r, prefix(r))));
  }

  /** {@code {"result": value}} with upstream's status rule, for a client on this host. */
  private static ExtraEndpoint.Answer answer(ExtraEndpoint.Request request, Object result) {
    ObjectNode body = JsonNodeFactory.instance.objectNode();
    body.set("result", JSON.valueToTree(result));
    boolean failed = result == null || Boolean.FALSE.equals(result);
    return new ExtraEndpoint.Answer(failed ? 400 : 200, body);
  }

  /** Refuses clients that are not on this host; called first by every route. */
  private static String required(ExtraEndpoint.Request request, String name) {
    checkLoopback(request.client());
    String v = request.param(name);
    if (v == null) {
      throw ProtocolException.invalidField(name, "required query parameter is missing");
    }
    return v;
  }

  static void checkLoopback(InetAddress client) {
    if (client != null && !client.isLoopbackAddress()) {
      throw ProtocolException.of(403, "the cluster storage answers this host only (loopback); use etcd for workers "
          + "on other hosts", null);
    }
  }

  private static long integer(String value, String field) {
    try {
      return Long.parseLong(value.strip());
    } catch (NumberFormatException e) {
      throw ProtocolException.invalidField(field, "expected an integer, found \"" + value + "\"");
    }
  }

  private Map<String, String> prefix(ExtraEndpoint.Request r) {
    String prefix = required(r, "key_prefix");
    String keysOnly = r.param("keys_only");
    boolean only = keysOnly != null && switch (keysOnly.strip().toLowerCase(java.util.Locale.ROOT)) {
      case "1", "true", "yes", "on" -> true;
      case "0", "false", "no", "off", "" -> false;
      default -> throw ProtocolException.invalidField("keys_only", "expected 0 or 1, found \"" + keysOnly + "\"");
    };
    Map<String, String> found = storage.getPrefix(prefix);
    if (only) {
      found.replaceAll((k, v) -> "");
    }
    return found;
  }

  /** {@code POST /set}: upstream's {@code StorageItem}. */
  private boolean set(byte[] body) {
    JsonNode n;
    try {
      n = JSON.readTree(body);
    } catch (IOException e) {
      throw ProtocolException.of(400, "malformed JSON: " + e.getMessage(), null);
    }
    if (n == null || !n.isObject()) {
      throw ProtocolException.of(400, "expected a JSON object with key, value, ttl, expire_time and overwrite_if_exists",
          null);
    }
    JsonNode key = n.get("key");
    if (key == null || !key.isTextual()) {
      throw ProtocolException.invalidField("key", key == null ? "required field is missing" : "expected a string");
    }
    JsonNode value = n.get("value");
    if (value != null && !value.isNull() && !value.isTextual()) {
      throw ProtocolException.invalidField("value", "expected a string");
    }
    long ttl = number(n, "ttl");
    double expireTime = n.hasNonNull("expire_time") ? number(n, "expire_time") : -1;
    JsonNode overwrite = n.get("overwrite_if_exists");
    if (overwrite != null && !overwrite.isNull() && !overwrite.isBoolean()) {
      throw ProtocolException.invalidField("overwrite_if_exists", "expected true or false");
    }
    return storage.set(key.asText(), value == null || value.isNull() ? "" : value.asText(),
        overwrite != null && overwrite.asBoolean(), ttl, expireTime);
  }

  private static long number(JsonNode n, String field) {
    JsonNode v = n.get(field);
    if (v == null || v.isNull()) {
      return -1;
    }
    if (v.isIntegralNumber() && v.canConvertToLong()) {
      return v.asLong();
    }
    if (v.isTextual()) {
      return integer(v.asText(), field);
    }
    throw ProtocolException.invalidField(field, "expected an integer");
  }
}
