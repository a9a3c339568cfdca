package dev.affinity.bench.live;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.bench.drive.OutgoingRequest;
import dev.affinity.bench.drive.RequestTransport;
import dev.affinity.bench.metrics.RequestRecord;
import dev.affinity.bench.trace.BlockTokens;
import dev.affinity.bench.trace.TraceRequest;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Iterator;
import java.util.concurrent.ExecutorService;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.stream.Stream;

/**
 * Sends a driver's requests to a running frontend over HTTP: a streaming {@code /v1/completions}
 * request with the prompt as token ids, usage in the last chunk, and the agent's session headers.
 * TTFT is the first SSE event; the route (context and generation instance and rank, reused tokens)
 * comes from the {@code x-affinity-route} debug header when the frontend sends it, else the reused
 * tokens from {@code usage.prompt_tokens_details.cached_tokens}. Each request runs on a thread of
 * {@code threads} (it blocks reading its stream).
 */
public final class HttpTransport implements RequestTransport {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final HttpClient client;
  private final URI endpoint;
  private final String model;
  private final BlockTokens blockTokens;
  private final String sessionHeader;
  private final String parentHeader;
  private final ExecutorService threads;
  private final LongSupplier clockUs;
  private final Duration timeout;

  /**
   * @param baseUrl the frontend, e.g. {@code http://127.0.0.1:8000}
   * @param clockUs the run's clock (microseconds since it started)
   */
  public HttpTransport(String baseUrl, String model, BlockTokens blockTokens, String sessionHeader, String parentHeader,
      ExecutorService threads, LongSupplier clockUs, Duration timeout) {
    this.client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10)).build();
    this.endpoint = URI.create(baseUrl.replaceAll("/+$", "") + "/v1/completions");
    this.model = model;
    this.blockTokens = blockTokens;
    this.sessionHeader = sessionHeader;
    this.parentHeader = parentHeader;
    this.threads = threads;
    this.clockUs = clockUs;
    this.timeout = timeout;
  }

  @Override
  public void send(OutgoingRequest out, Consumer<RequestRecord> done) {
    threads.execute(() -> done.accept(call(out)));
  }

  /** Any failure (refused, reset mid-stream, malformed event) is one failed request, never a lost one. */

  private RequestRecord call(OutgoingRequest out) {
    TraceRequest r = out.request();
    long sendUs = clockUs.getAsLong();
    Outcome o = new Outcome();
    try {
      HttpRequest.Builder b = HttpRequest.newBuilder(endpoint).timeout(timeout).header("content-type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(body(r)));
      if (r.sessionId() != null) {
        b.header(sessionHeader, r.sessionId());
      }
      if (r.parentSessionId() != null) {
        b.header(parentHeader, r.parentSessionId());
      }
      HttpResponse<Stream<String>> resp = client.send(b.build(), HttpResponse.BodyHandlers.ofLines());
      o.status = resp.statusCode();
      resp.headers().firstValue("x-affinity-route").ifPresent(o::route);
      try (Stream<String> lines = resp.body()) {
        if (o.status != 200) {
          o.error = "HTTP " + o.status + ": " + String.join("\n", (Iterable<String>) lines::iterator);
        } else {
          read(lines.iterator(), o, sendUs);
        }
      }
    } catch (IOException | RuntimeException e) {  // RuntimeException: UncheckedIOException from the line stream
      o.status = o.status == 0 || o.status == 200 ? 599 : o.status;
      o.error = e.toString();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      o.status = 599;
      o.error = "interrupted";
    }
    long end = clockUs.getAsLong();
    return new RequestRecord(out.index(), r.sessionId(), r.parentSessionId(), out.agentId(), sendUs,
        o.firstUs < 0 ? -1 : o.firstUs - sendUs, end - sendUs, o.tokens, r.inputLength(), o.reused, out.idealReusedTokens(), out.pooledReusedTokens(),
        o.ctx, o.ctxRank, o.gen, o.genRank, o.status, o.error);
  }

  private String body(TraceRequest r) {
    ObjectNode body = JSON.createObjectNode();
    body.put("model", model);
    ArrayNode prompt = body.putArray("prompt");
    for (int t : blockTokens.tokens(r)) {
      prompt.add(t);
    }
    body.put("max_tokens", r.outputLength());
    body.put("stream", true);
    body.putObject("stream_options").put("include_usage", true);
    try {
      return JSON.writeValueAsString(body);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private void read(Iterator<String> lines, Outcome o, long sendUs) throws IOException {
    boolean doneSeen = false;
    while (lines.hasNext()) {
      String line = lines.next();
      if (!line.startsWith("data:")) {
        continue;
      }
      String data = line.substring(5).trim();
      if (data.equals("[DONE]")) {
        doneSeen = true;
        break;
      }
      if (o.firstUs < 0) {
        o.firstUs = clockUs.getAsLong();
      }
      JsonNode chunk = JSON.readTree(data);
      if (chunk.has("error")) {
        o.status = 502;
        o.error = chunk.path("error").path("message").asText("error event in the stream");
        return;
      }
      JsonNode usage = chunk.path("usage");
      if (usage.isObject()) {
        o.tokens = usage.path("completion_tokens").asInt(o.tokens);
        JsonNode cached = usage.path("prompt_tokens_details").path("cached_tokens");
        if (o.reused < 0 && cached.isInt()) {
          o.reused = cached.asInt();
        }
      }
    }
    if (!doneSeen) {
      o.status = 502;
      o.error = "the stream ended without [DONE]";
    }
  }

  /** What one request produced. */
  private static final class Outcome {
    int status;
    String error;
    long firstUs = -1;
    int tokens;
    int reused = -1;
    String ctx;
    int ctxRank = -1;
    String gen;
    int genRank = -1;

    /** Reads {@code ctx=...; ctx_rank=...; gen=...; gen_rank=...; reused=...}. */
    void route(String header) {
      for (String part : header.split(";")) {
        String[] kv = part.trim().split("=", 2);
        if (kv.length != 2) {
          continue;
        }
        switch (kv[0]) {
          case "ctx" -> ctx = kv[1];
          case "gen" -> gen = kv[1];
          case "ctx_rank" -> ctxRank = parse(kv[1]);
          case "gen_rank" -> genRank = parse(kv[1]);
          case "reused" -> reused = parse(kv[1]);
          default -> { }
        }
      }
    }

    private static int parse(String s) {
      try {
        return Integer.parseInt(s.trim());
      } catch (NumberFormatException e) {
        return -1;
      }
    }
  }
}
