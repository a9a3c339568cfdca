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
 * query that is not what the contract says gets 400 with an error naming the field.
 *
 * <p>Who may call it: a client on this host only (403 otherwise, as upstream's
 * {@code validate_http_cluster_storage_scope}), and, when the frontend has an {@code internal_request_auth_key},
 * only with every request (reads too) signed with it ({@link StorageAuth}; 401 otherwise), so neither a local
 * process nor a client behind a reverse proxy on this host can register a worker, delete one or read the
 * membership. The checks run before the request is looked at, in that order.
 */
public final class ClusterStorageEndpoints {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final InMemoryClusterStorage storage;
  private final StorageAuth.Verifier auth;

  /** @param auth checks each request's signature; null: the storage is open to this host (no key configured) */
  public ClusterStorageEndpoints(InMemoryClusterStorage storage, StorageAuth.Verifier auth) {
    this.storage = storage;
    this.auth = auth;
  }

  /** The five routes, by path. */
  public Map<String, ExtraEndpoint> endpoints() {
    return Map.of(
        "/set", route("POST", r -> set(r.body())),
        "/get", route("GET", r -> storage.get(required(r, "key")).orElse(null)),
        "/delete", route("DELETE", r -> storage.delete(required(r, "key"))),
        "/expire", route("GET", r -> storage.expire(required(r, "key"), integer(required(r, "ttl"), "ttl"))),
        "/get_prefix", route("GET", this::prefix));
  }

  /** A route that checks the caller first, then answers with {@code result}'s value. */
  private ExtraEndpoint route(String method, java.util.function.Function<ExtraEndpoint.Request, Object> result) {
    return new ExtraEndpoint(method, false, r -> {
      checkLoopback(r.client());
      checkSigned(r);
      return answer(r, result.apply(r));
    });
  }

  private void checkSigned(ExtraEndpoint.Request r) {
    if (auth == null) {
      return;
    }
    String refusal = auth.refusal(r.method(), r.path(), r.query(), r.headers(), r.body());
    if (refusal != null) {
      throw ProtocolException.of(401, refusal, null);
    }
  }

  /** {@code {"result": value}} with upstream's status rule, for a client on this host. */
  private static ExtraEndpoint.Answer answer(ExtraEndpoint.Request request, Object result) {
    ObjectNode body = JsonNodeFactory.instance.objectNode();
    body.set("result", JSON.valueToTree(result));
    boolean failed = result == null || Boolean.FALSE.equals(result);
    return new ExtraEndpoint.Answer(failed ? 400 : 200, body);
  }

  private static String required(ExtraEndpoint.Request request, String name) {
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
