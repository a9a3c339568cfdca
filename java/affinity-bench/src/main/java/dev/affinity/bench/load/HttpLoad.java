package dev.affinity.bench.load;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;

/**
 * A closed-loop HTTP load generator for OpenAI-compatible endpoints: {@code concurrency} sessions,
 * each sending its next request when the previous one ends, until {@code requests} are done.
 * Measures time to first byte of the answer (first SSE event when streaming), total latency and
 * throughput. Usage:
 * {@code java ... HttpLoad URL PATH CONCURRENCY REQUESTS STREAM(true|false) MAX_TOKENS [HEADER:VALUE ...]}
 */
public final class HttpLoad {
  private HttpLoad() {}

  /** What a run measured (microseconds). */
  public record Result(int requests, int errors, double seconds, Histogram ttft, Histogram total) {
    public double requestsPerSecond() {
      return requests / seconds;
    }

    public String summary() {
      return String.format(Locale.ROOT,
          "requests %d (errors %d) in %.2f s: %.0f req/s; ttft p50 %.2f ms p99 %.2f ms; total p50 %.2f ms p99 %.2f ms",
          requests, errors, seconds, requestsPerSecond(), ttft.getValueAtPercentile(50) / 1000.0,
          ttft.getValueAtPercentile(99) / 1000.0, total.getValueAtPercentile(50) / 1000.0,
          total.getValueAtPercentile(99) / 1000.0);
    }
  }

  public static Result run(String url, String path, int concurrency, int requests, boolean stream, int maxTokens,
      String... headers) throws Exception {
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(10)).build();
    ConcurrentHistogram ttft = new ConcurrentHistogram(3);
    ConcurrentHistogram total = new ConcurrentHistogram(3);
    AtomicInteger started = new AtomicInteger();
    AtomicInteger errors = new AtomicInteger();
    AtomicLong done = new AtomicLong();
    String body = path.contains("chat")
        ? "{\"model\": \"affinity-sim\", \"messages\": [{\"role\": \"user\", \"content\": \"load test prompt\"}], "
            + "\"max_tokens\": " + maxTokens + ", \"stream\": " + stream + "}"
        : "{\"model\": \"affinity-sim\", \"prompt\": \"load test prompt\", \"max_tokens\": " + maxTokens + ", \"stream\": "
            + stream + "}";
    long t0 = System.nanoTime();
    CompletableFuture<?>[] sessions = new CompletableFuture<?>[concurrency];
    for (int s = 0; s < concurrency; s++) {
      final int session = s;
      sessions[s] = CompletableFuture.runAsync(() -> { }).thenCompose(x ->
          loop(client, url + path, body, headers, session, requests, started, errors, ttft, total, done));
    }
    CompletableFuture.allOf(sessions).get();
    double seconds = (System.nanoTime() - t0) / 1e9;
    return new Result((int) done.get(), errors.get(), seconds, ttft, total);
  }

  private static CompletableFuture<Void> loop(HttpClient client, String url, String body, String[] headers, int session,
      int requests, AtomicInteger started, AtomicInteger errors, Histogram ttft, Histogram total, AtomicLong done) {
    if (started.getAndIncrement() >= requests) {
      return CompletableFuture.completedFuture(null);
    }
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofMinutes(5))
        .header("Content-Type", "application/json").header("X-Session-ID", "load-" + session)
        .POST(HttpRequest.BodyPublishers.ofString(body));
    for (String h : headers) {
      int colon = h.indexOf(':');
      b.header(h.substring(0, colon).trim(), h.substring(colon + 1).trim());
    }
    long start = System.nanoTime();
    return client.sendAsync(b.build(), HttpResponse.BodyHandlers.ofLines()).thenCompose(resp -> {
      long[] first = {-1};
      try (Stream<String> lines = resp.body()) {
        lines.forEach(l -> {
          if (first[0] < 0 && !l.isEmpty()) {
            first[0] = System.nanoTime();
          }
        });
      }
      long end = System.nanoTime();
      if (resp.statusCode() != 200) {
        errors.incrementAndGet();
      } else {
        ttft.recordValue(Math.max(1, ((first[0] < 0 ? end : first[0]) - start) / 1000));
        total.recordValue(Math.max(1, (end - start) / 1000));
      }
      done.incrementAndGet();
      return loop(client, url, body, headers, session, requests, started, errors, ttft, total, done);
    }).exceptionallyCompose(e -> {
      errors.incrementAndGet();
      done.incrementAndGet();
      return loop(client, url, body, headers, session, requests, started, errors, ttft, total, done);
    });
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 6) {
      System.err.println("usage: HttpLoad URL PATH CONCURRENCY REQUESTS STREAM MAX_TOKENS [HEADER:VALUE ...]");
      System.exit(2);
    }
    String[] headers = java.util.Arrays.copyOfRange(args, 6, args.length);
    Result r = run(args[0], args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]), Boolean.parseBoolean(args[4]),
        Integer.parseInt(args[5]), headers);
    System.out.println(r.summary());
  }
}
