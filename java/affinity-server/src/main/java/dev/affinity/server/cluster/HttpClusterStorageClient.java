package dev.affinity.server.cluster;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A worker's view of a frontend's HTTP cluster storage, as upstream's {@code HttpClusterStorageClient}: every
 * call is one request with a 5 s budget; only status 200 is success; a connection failure is a failure (false,
 * empty). It cannot watch.
 */
public final class HttpClusterStorageClient implements ClusterStorage {
  private static final Logger LOG = LoggerFactory.getLogger(HttpClusterStorageClient.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  static final Duration TIMEOUT = Duration.ofSeconds(5);

  private final String base;
  private final HttpClient http;

  /** @param clusterUri {@code http(s)://host:port}; {@code http://} is added when the scheme is missing */
  public HttpClusterStorageClient(String clusterUri) {
    String u = clusterUri.strip();
    if (!u.startsWith("http://") && !u.startsWith("https://")) {
      u = "http://" + u;
    }
    this.base = u.endsWith("/") ? u.substring(0, u.length() - 1) : u;
    this.http = HttpClient.newBuilder().connectTimeout(TIMEOUT).version(HttpClient.Version.HTTP_1_1).build();
  }

  private HttpResponse<String> send(HttpRequest.Builder b) throws IOException, InterruptedException {
    return http.send(b.timeout(TIMEOUT).build(), HttpResponse.BodyHandlers.ofString());
  }

  private URI uri(String endpoint, Map<String, String> params) {
    StringBuilder sb = new StringBuilder(base).append('/').append(endpoint);
    char sep = '?';
    for (Map.Entry<String, String> e : params.entrySet()) {
      sb.append(sep).append(e.getKey()).append('=').append(URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8));
      sep = '&';
    }
    return URI.create(sb.toString());
  }

  /** 200 or not; a failure to connect is "not" (logged at debug: workers retry). */
  private boolean ok(String what, HttpRequest.Builder b) {
    try {
      return send(b).statusCode() == 200;
    } catch (IOException e) {
      LOG.debug("cluster storage {}: {} failed: {}", base, what, e.toString());
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  private Optional<JsonNode> result(String what, HttpRequest.Builder b) {
    try {
      HttpResponse<String> r = send(b);
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
    return ok("set " + key, HttpRequest.newBuilder(uri("set", Map.of())).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(item.toString())));
  }

  @Override
  public boolean expire(String key, long ttlSeconds) {
    Map<String, String> q = new LinkedHashMap<>();
    q.put("key", key);
    q.put("ttl", Long.toString(ttlSeconds));
    return ok("expire " + key, HttpRequest.newBuilder(uri("expire", q)).GET());
  }

  @Override
  public Optional<String> get(String key) {
    return result("get " + key, HttpRequest.newBuilder(uri("get", Map.of("key", key))).GET())
        .filter(JsonNode::isTextual).map(JsonNode::asText);
  }

  @Override
  public boolean delete(String key) {
    return ok("delete " + key, HttpRequest.newBuilder(uri("delete", Map.of("key", key))).DELETE());
  }

  @Override
  public Map<String, String> getPrefix(String prefix) {
    Map<String, String> q = new LinkedHashMap<>();
    q.put("key_prefix", prefix);
    q.put("keys_only", "0");
    Map<String, String> out = new LinkedHashMap<>();
    result("get_prefix " + prefix, HttpRequest.newBuilder(uri("get_prefix", q)).GET())
        .ifPresent(n -> n.fields().forEachRemaining(e -> out.put(e.getKey(), e.getValue().asText())));
    return out;
  }

  @Override
  public AutoCloseable watch(String prefix, Consumer<StorageEvent> listener) {
    throw new UnsupportedOperationException("the HTTP cluster storage cannot be watched over HTTP");
  }

  @Override
  public void close() {
    // the JDK client's connections go with it (JDK 21+ closes them at once)
    if (http instanceof AutoCloseable c) {
      try {
        c.close();
      } catch (Exception e) {
        LOG.debug("closing the HTTP client: {}", e.toString());
      }
    }
  }
}
