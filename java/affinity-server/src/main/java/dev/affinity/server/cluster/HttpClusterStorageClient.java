package dev.affinity.server.cluster;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.protocol.InternalAuth;
import dev.affinity.server.worker.LegAuth;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A worker's view of a frontend's HTTP cluster storage, as upstream's {@code HttpClusterStorageClient}: every
 * call is one request with a 5 s budget; only status 200 is success; a connection failure is a failure (false,
 * empty). It cannot watch. With an {@code internal_request_auth_key} every request is signed
 * ({@link StorageAuth}), as the frontend then requires.
 */
public final class HttpClusterStorageClient implements ClusterStorage {
  private static final Logger LOG = LoggerFactory.getLogger(HttpClusterStorageClient.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  static final Duration TIMEOUT = Duration.ofSeconds(5);

  private final String base;
  private final HttpClient http;
  private final StorageAuth.Signer signer;

  /**
   * @param clusterUri {@code http(s)://host:port}; {@code http://} is added when the scheme is missing
   * @param auth signs every request with the shared key; null: unsigned
   */
  public HttpClusterStorageClient(String clusterUri, InternalAuth auth) {
    String u = clusterUri.strip();
    if (!u.startsWith("http://") && !u.startsWith("https://")) {
      u = "http://" + u;
    }
    this.base = u.endsWith("/") ? u.substring(0, u.length() - 1) : u;
    this.http = HttpClient.newBuilder().connectTimeout(TIMEOUT).version(HttpClient.Version.HTTP_1_1).build();
    this.signer = auth == null ? null : new StorageAuth.Signer(auth, Clock.systemUTC());
  }

  /** One request to {@code /endpoint} with these query parameters and body (null: none), signed when keyed. */
  private HttpRequest request(String method, String endpoint, Map<String, String> params, byte[] body) {
    StringBuilder sb = new StringBuilder(base).append('/').append(endpoint);
    char sep = '?';
    Map<String, List<String>> query = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : params.entrySet()) {
      sb.append(sep).append(e.getKey()).append('=').append(URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8));
      sep = '&';
      query.put(e.getKey(), List.of(e.getValue()));
    }
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(sb.toString())).timeout(TIMEOUT)
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body));
    if (body != null) {
      b.header("Content-Type", "application/json");
    }
    if (signer != null) {
      b.header(LegAuth.HEADER, signer.sign(method, "/" + endpoint, query, body));
    }
    return b.build();
  }

  /** 200 or not; a failure to connect is "not" (logged at debug: workers retry). */
  private boolean ok(String what, HttpRequest request) {
    try {
      int status = http.send(request, HttpResponse.BodyHandlers.ofString()).statusCode();
      if (status == 401 || status == 403) {
        LOG.warn("cluster storage {}: {} refused ({}): check internal_request_auth_key and that the storage is on "
            + "this host", base, what, status);
      }
      return status == 200;
    } catch (IOException e) {
      LOG.debug("cluster storage {}: {} failed: {}", base, what, e.toString());
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  private Optional<JsonNode> result(String what, HttpRequest request) {
    try {
      HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() != 200) {
        return Optional.empty();
      }
      return Optional.ofNullable(JSON.readTree(r.body()).get("result"));
    } catch (IOException e) {
      LOG.debug("cluster storage {}: {} failed: {}", base, what, e.toString());
      return Optional.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.empty();
    }
  }

  @Override
  public boolean set(String key, String value, boolean overwrite, long ttlSeconds) {
    ObjectNode item = JSON.createObjectNode();
    item.put("key", key);
    item.put("value", value);
    item.put("expire_time", -1);
    item.put("ttl", ttlSeconds);
    item.put("overwrite_if_exists", overwrite);
    return ok("set " + key, request("POST", "set", Map.of(), item.toString().getBytes(StandardCharsets.UTF_8)));
  }

  @Override
  public boolean expire(String key, long ttlSeconds) {
    Map<String, String> q = new LinkedHashMap<>();
    q.put("key", key);
    q.put("ttl", Long.toString(ttlSeconds));
    return ok("expire " + key, request("GET", "expire", q, null));
  }

  @Override
  public Optional<String> get(String key) {
    return result("get " + key, request("GET", "get", Map.of("key", key), null))
        .filter(JsonNode::isTextual).map(JsonNode::asText);
  }

  @Override
  public boolean delete(String key) {
    return ok("delete " + key, request("DELETE", "delete", Map.of("key", key), null));
  }

  @Override
  public Map<String, String> getPrefix(String prefix) {
    Map<String, String> q = new LinkedHashMap<>();
    q.put("key_prefix", prefix);
    q.put("keys_only", "0");
    Map<String, String> out = new LinkedHashMap<>();
    result("get_prefix " + prefix, request("GET", "get_prefix", q, null))
        .ifPresent(n -> n.fields().forEachRemaining(e -> out.put(e.getKey(), e.getValue().asText())));
    return out;
  }

  @Override
  public AutoCloseable watch(String prefix, Consumer<StorageEvent> listener) {
    throw new UnsupportedOperationException("the HTTP cluster storage cannot be watched over HTTP");
  }

  @Override
  public void close() {
    closeClient(http);
  }

  /** Closes a JDK HTTP client: on JDK 21+ its connections go at once; before that, with the client. */
  public static void closeClient(HttpClient client) {
    if (client instanceof AutoCloseable c) {
      try {
        c.close();
      } catch (Exception e) {
        LOG.debug("closing the HTTP client: {}", e.toString());
      }
    }
  }
}
