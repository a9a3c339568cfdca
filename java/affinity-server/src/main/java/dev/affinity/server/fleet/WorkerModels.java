package dev.affinity.server.fleet;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.config.AffinitySettings;
import dev.affinity.config.WorkerPool;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The model names the context workers serve, for a frontend without {@code affinity.model}: as upstream's
 * frontend, which forwards {@code /v1/models} to a context worker, it lists what they report (read from each
 * remote worker's {@code /v1/models} when it joins; an embedded worker serves its pool's {@code model}, or
 * {@value AffinitySettings#DEFAULT_MODEL} for the CPU executor). Empty while no context worker is in.
 */
final class WorkerModels {
  private static final Logger LOG = LoggerFactory.getLogger(WorkerModels.class);
  private static final ObjectMapper JSON = new ObjectMapper();

  private final Map<String, List<String>> byWorker = new ConcurrentHashMap<>();
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();

  /** The model an embedded pool serves. */
  static String modelOf(WorkerPool pool) {
    return pool.executorConfig().get("model") instanceof String s && !s.isBlank() ? s : AffinitySettings.DEFAULT_MODEL;
  }

  void put(String workerId, List<String> models) {
    byWorker.put(workerId, List.copyOf(models));
  }

  /** Reads a remote worker's {@code GET /v1/models}; a worker that does not answer it serves no named model. */
  void fetch(String workerId, URI baseUrl) {
    try {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(baseUrl + "/v1/models"))
          .timeout(Duration.ofSeconds(10)).GET().build(), HttpResponse.BodyHandlers.ofString());
      List<String> ids = new ArrayList<>();
      if (r.statusCode() == 200) {
        for (JsonNode card : JSON.readTree(r.body()).path("data")) {
          if (card.path("id").isTextual()) {
            ids.add(card.path("id").asText());
          }
        }
      } else {
        LOG.warn("worker {}: GET /v1/models answered {}", workerId, r.statusCode());
      }
      put(workerId, ids);
    } catch (IOException e) {
      LOG.warn("worker {}: cannot read /v1/models: {}", workerId, e.toString());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  void remove(String workerId) {
    byWorker.remove(workerId);
  }

  /** The names the given (ready) workers serve, without repeats, in their order. */
  List<String> of(List<String> workerIds) {
    Set<String> out = new LinkedHashSet<>();
    for (String id : workerIds) {
      out.addAll(byWorker.getOrDefault(id, List.of()));
    }
    return new ArrayList<>(out);
  }
}
