package dev.affinity.server.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The generation worker's stream through the frontend: its bytes reach the client as the worker wrote
 * them, and a client that reads slowly holds the worker back instead of filling the frontend's memory.
 */
class StreamRelayTest {
  private FakeTrtllmServe ctx;
  private FakeTrtllmServe gen;
  private AffinityServer server;

  @BeforeEach
  void start() throws Exception {
    ctx = FakeTrtllmServe.start();
    gen = FakeTrtllmServe.start();
    String yaml = """
        hostname: 127.0.0.1
        port: 8000
        context_servers: {num_instances: 1, urls: ["127.0.0.1:%d"], router: {type: round_robin}}
        generation_servers: {num_instances: 1, urls: ["127.0.0.1:%d"], router: {type: load_balancing}}
        affinity: {model: m}
        """.formatted(ctx.port(), gen.port());
    DisaggConfig cfg = ConfigLoader.parse(yaml, "relay.yaml").config();
    server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "t").withPort(0).withAccessLog(AccessLog.none()));
  }

  @AfterEach
  void stop() {
    server.close();
    ctx.close();
    gen.close();
  }

  private static final String STREAMED = "{\"model\": \"m\", \"prompt\": \"hi\", \"max_tokens\": 3, \"stream\": true}";

  @Test
  void theWorkersEventsReachTheClientByteForByte() throws Exception {
    String first = "{\"id\" : \"cmpl-w\",  \"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"h\\u00e9\","
        + "\"finish_reason\":null}], \"x_float\": 1.50e0, \"x_kept\": {\"b\":1,\"a\":2}}";
    String last = "{\"id\":\"cmpl-w\",\"choices\":[{\"index\":0,\"text\":\"!\",\"finish_reason\":\"length\"}],"
        + "\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2,\"total_tokens\":6}}";
    gen.enqueue(FakeTrtllmServe.Behavior.raw("text/event-stream",
        ": comment\r\n\r\ndata:" + first + "\r\n\r\nid: 2\ndata: " + last + "\n\ndata: [DONE]\n\n"));
    HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + server.port() + "/v1/completions"))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(STREAMED)).build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    assertEquals("data: " + first + "\n\ndata: " + last + "\n\ndata: [DONE]\n\n", r.body(),
        "each event's JSON as the worker wrote it (spacing, key order, number text, escapes), framed as data: events");
  }

  @Test
  void aSlowClientPausesItsWorkerConnectionAndTheFrontendBuffersBoundedBytes() throws Exception {
    int chunks = 4096;
    int chunkBytes = 8 * 1024; // 32 MiB in all
    gen.enqueue(FakeTrtllmServe.Behavior.bulk(chunks, chunkBytes));
    Counter pauses = server.frontend().registry().get("affinity.frontend.stream.pauses").counter();
    double pausesBefore = pauses.count();
    try (Socket client = new Socket()) {
      client.setReceiveBufferSize(16 * 1024);
      client.connect(new InetSocketAddress("127.0.0.1", server.port()));
      byte[] body = STREAMED.getBytes(StandardCharsets.UTF_8);
      OutputStream out = client.getOutputStream();
      out.write(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
          + "Content-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      out.write(body);
      out.flush();
      // the client reads nothing until the frontend has paused the worker: its buffers are full
      await(() -> pauses.count() > pausesBefore, "the frontend pauses the worker connection");

      ByteArrayOutputStream received = new ByteArrayOutputStream();
      InputStream in = client.getInputStream();
      byte[] small = new byte[1024]; // then it reads, a little at a time
      for (int n; (n = in.read(small)) >= 0; ) {
        received.write(small, 0, n);
      }
      String text = received.toString(StandardCharsets.UTF_8);
      assertTrue(text.startsWith("HTTP/1.1 200"), text.substring(0, Math.min(200, text.length())));
      assertEquals(chunks, count(text, "data: {\"id\":\"cmpl-bulk\""), "every chunk arrived");
      assertTrue(text.endsWith("data: [DONE]\n\n\r\n0\r\n\r\n"), "and the end of the stream");
    }
    DistributionSummary buffered = server.frontend().registry().get("affinity.frontend.stream.buffered").summary();
    // Bounded by the high-water mark (64 KiB), plus what the worker connection had read when the pause took
    // effect (at most one read event: 16 reads of up to 64 KiB when the pause hops to another loop), plus
    // the chunk in hand: about 1.1 MiB at worst, far below the 32 MiB answer. 2 MiB leaves room for
    // framing without depending on how the reads fell.
    assertTrue(buffered.max() <= 2 << 20, "the frontend held at most 2 MiB of the 32 MiB stream: " + buffered.max());
  }

  private static int count(String text, String needle) {
    int n = 0;
    for (int i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + needle.length())) {
      n++;
    }
    return n;
  }

  private static void await(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20); // a bound for a broken build
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, what);
      Thread.sleep(5);
    }
  }
}
