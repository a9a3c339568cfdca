package dev.affinity.server.cluster;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.OptionalDouble;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The steady-clock exchange upstream's frontend runs with a worker before routing to it
 * ({@code _prepare_server} / {@code set_steady_clock_offsets}): {@code GET /steady_clock_offset} answers the
 * worker's {@code receive_ts} and {@code transmit_ts}; with the frontend's send and receive times the NTP
 * formulas give the delay and the offset, and {@code POST /steady_clock_offset {"offset": -offset}} tells the
 * worker how to align the timestamps of its perf metrics. Failures are logged and never keep a worker out.
 */
public final class ClockSync {
  private static final Logger LOG = LoggerFactory.getLogger(ClockSync.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  static final String PATH = "/steady_clock_offset";

  private final HttpClient http;
  private final Duration timeout;

  public ClockSync(Duration timeout) {
    this.timeout = timeout;
    this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(timeout).build();
  }

  /** The frontend's steady clock, seconds. */
  static double now() {
    return System.nanoTime() / 1e9;
  }

  /** Measures and sets the worker's offset; returns the offset measured (seconds), empty when it failed. */
  public OptionalDouble align(String baseUrl) {
    URI uri = URI.create(baseUrl + PATH);
    try {
      double originate = now();
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri).timeout(timeout).GET().build(),
          HttpResponse.BodyHandlers.ofString());
      double destination = now();
      if (r.statusCode() != 200) {
        LOG.warn("{}: GET {} answered {}; the worker's perf-metric timestamps stay unaligned", baseUrl, PATH,
            r.statusCode());
        return OptionalDouble.empty();
      }
      JsonNode body = JSON.readTree(r.body());
      double receive = body.path("receive_ts").asDouble(Double.NaN);
      double transmit = body.path("transmit_ts").asDouble(Double.NaN);
      if (Double.isNaN(receive) || Double.isNaN(transmit)) {
        LOG.warn("{}: {} answered without receive_ts and transmit_ts", baseUrl, PATH);
        return OptionalDouble.empty();
      }
      double delay = (destination - originate) - (transmit - receive);
      double offset = ((receive - originate) + (transmit - destination)) / 2;
      LOG.info("{}: steady clock delay {} s, offset {} s", baseUrl, delay, offset);
      HttpResponse<String> set = http.send(HttpRequest.newBuilder(uri).timeout(timeout)
          .header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(JSON.createObjectNode().put("offset", -offset).toString())).build(),
          HttpResponse.BodyHandlers.ofString());
      if (set.statusCode() != 200) {
        LOG.warn("{}: POST {} answered {}; the perf-metric timestamps could be misaligned", baseUrl, PATH,
            set.statusCode());
      }
      return OptionalDouble.of(offset);
    } catch (IOException e) {
      LOG.warn("{}: cannot align the steady clock: {}", baseUrl, e.toString());
      return OptionalDouble.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return OptionalDouble.empty();
    }
  }
}
