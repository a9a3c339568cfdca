package dev.affinity.bench.live;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.bench.drive.OutgoingRequest;
import dev.affinity.bench.metrics.RequestRecord;
import dev.affinity.bench.trace.BlockTokens;
import dev.affinity.bench.trace.TraceRequest;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Whatever goes wrong on the wire, a request ends with exactly one record: failures are records too. */
class HttpTransportTest {
  private static final TraceRequest REQUEST = new TraceRequest(0, "s", null, 64, 4, 64, List.of(1L));

  /** Serves one connection with {@code response} (raw bytes), then closes it. */
  private static ServerSocket serveOnce(String response) throws Exception {
    ServerSocket server = new ServerSocket(0);
    Thread t = new Thread(() -> {
      try (Socket s = server.accept()) {
        BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.ISO_8859_1));
        int length = 0;
        for (String line = in.readLine(); line != null && !line.isEmpty(); line = in.readLine()) {
          if (line.toLowerCase().startsWith("content-length:")) {
            length = Integer.parseInt(line.substring(15).trim());
          }
        }
        for (int i = 0; i < length; i++) {
          in.read();
        }
        OutputStream out = s.getOutputStream();
        out.write(response.getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
      } catch (Exception ignored) {
        // the client's problem is what the test looks at
      }
    });
    t.setDaemon(true);
    t.start();
    return server;
  }

  private static RequestRecord send(int port) throws Exception {
    ExecutorService threads = Executors.newCachedThreadPool();
    try {
      HttpTransport t = new HttpTransport("http://127.0.0.1:" + port, "m", new BlockTokens(100, 0), "x-session-id", "x-parent",
          threads, () -> 0L, Duration.ofSeconds(30));
      CompletableFuture<RequestRecord> done = new CompletableFuture<>();
      t.send(new OutgoingRequest(0, REQUEST, "s", 0), done::complete);
      return done.get(60, TimeUnit.SECONDS);
    } finally {
      threads.shutdownNow();
    }
  }

  @Test
  void aStreamCutMidChunkIsAFailedRecord() throws Exception {
    // Chunked SSE whose second chunk announces 0x40 bytes and the connection closes after 5 of them.
    String response = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        + "1e\r\ndata: {\"choices\": [{}]}\n\n\r\n" + "40\r\ndata:";
    try (ServerSocket server = serveOnce(response)) {
      RequestRecord r = send(server.getLocalPort());
      assertEquals(599, r.status(), r.toString());
      assertNotNull(r.error());
    }
  }

  @Test
  void aStreamWithoutDoneIsAFailedRecord() throws Exception {
    String body = "data: {\"choices\": [{}]}\n\n";
    String response = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: " + body.length()
        + "\r\nconnection: close\r\n\r\n" + body;
    try (ServerSocket server = serveOnce(response)) {
      RequestRecord r = send(server.getLocalPort());
      assertEquals(502, r.status());
      assertTrue(r.error().contains("[DONE]"), r.error());
      assertTrue(r.ttftUs() >= 0, "the first event was seen");
    }
  }

  @Test
  void anErrorStatusIsARecordWithTheBody() throws Exception {
    String body = "{\"error\": {\"message\": \"prompt: too long\"}}";
    String response = "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: " + body.length()
        + "\r\nconnection: close\r\n\r\n" + body;
    try (ServerSocket server = serveOnce(response)) {
      RequestRecord r = send(server.getLocalPort());
      assertEquals(400, r.status());
      assertTrue(r.error().contains("prompt: too long"), r.error());
    }
  }
}
