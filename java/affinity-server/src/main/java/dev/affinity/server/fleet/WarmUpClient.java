package dev.affinity.server.fleet;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.function.IntFunction;

/**
 * The warm-up's load: raw HTTP/1.1 over plain sockets, shaped like the clients a frontend meets, so that the JIT
 * learns their branches before the real ones arrive (a warm-up from one client left the real frontend deoptimizing
 * Netty's header parser and aggregator at its first request from another: a different header set, a body in the
 * same packet as the head or in a second one, connections that close). Each of {@link #lanes} lanes sends its
 * requests one after another on a connection, opening a new one after a few requests or many, and rotates through
 * the header sets of {@link Shape}. Answers are read to their end (content length or chunks) and only their status
 * is kept.
 */
final class WarmUpClient {
  /** How many requests a lane sends on one connection before it opens another, in turn. */
  private static final int[] PER_CONNECTION = {1, 3, 16, 200};
  /** Every this many connections, the last request's answer is not waited for: the client closes (gives up). */
  private static final int ABANDONING = 3;

  /** One request: its path, body and extra headers (a session, a parent), all in ASCII. */
  record Request(String path, String body, List<String[]> headers) {}

  /** A client's request head: its header names, their order and case, and whether the body follows in one write. */
  enum Shape {
    /** wrk, and most load generators: the least headers, head and body in one write. */
    WRK(false, "Host", "%s", "Content-Type", "application/json"),
    /** curl. */
    CURL(false, "Host", "%s", "User-Agent", "curl/8.5.0", "Accept", "*/*", "Content-Type", "application/json"),
    /** OpenAI's and Anthropic's Python SDKs (httpx): lower-case names, many of them. */
    PYTHON_SDK(false, "host", "%s", "accept-encoding", "gzip, deflate", "connection", "keep-alive", "accept",
        "application/json", "content-type", "application/json", "user-agent", "OpenAI/Python 1.54.0",
        "x-stainless-lang", "python", "x-stainless-package-version", "1.54.0", "x-stainless-os", "Linux",
        "x-stainless-arch", "x64", "x-stainless-runtime", "CPython", "x-stainless-runtime-version", "3.11.2",
        "authorization", "Bearer warm-up", "x-stainless-async", "false", "x-stainless-retry-count", "0"),
    /** Node's fetch (undici): lower-case names, the body in a second write. */
    NODE_FETCH(true, "host", "%s", "connection", "keep-alive", "content-type", "application/json", "accept", "*/*",
        "accept-language", "*", "sec-fetch-mode", "cors", "user-agent", "node", "accept-encoding", "gzip, deflate"),
    /** The JDK's HttpClient and other Java clients: the body in a second write. */
    JAVA(true, "Host", "%s", "User-Agent", "Java-http-client/17", "Content-Type", "application/json");

    private final boolean bodyApart;
    private final String[] headers;

    Shape(boolean bodyApart, String... headers) {
      this.bodyApart = bodyApart;
      this.headers = headers;
    }

    /** The head of a POST of {@code bodyLength} bytes to {@code path} on {@code authority}. */
    String head(String path, String authority, int bodyLength, List<String[]> extra) {
      StringBuilder b = new StringBuilder(256).append("POST ").append(path).append(" HTTP/1.1\r\n");
      for (int i = 0; i < headers.length; i += 2) {
        b.append(headers[i]).append(": ").append(String.format(Locale.ROOT, headers[i + 1], authority)).append("\r\n");
      }
      boolean lower = Character.isLowerCase(headers[0].charAt(0));
      for (String[] h : extra) {
        b.append(lower ? h[0].toLowerCase(Locale.ROOT) : h[0]).append(": ").append(h[1]).append("\r\n");
      }
      return b.append(lower ? "content-length" : "Content-Length").append(": ").append(bodyLength)
          .append("\r\n\r\n").toString();
    }
  }

  private final int port;
  private final int lanes;

  WarmUpClient(int port, int lanes) {
    this.port = port;
    this.lanes = lanes;
  }

  /** Sends requests {@code from} to {@code to - 1} ({@code request(i)} makes the i-th), spread over the lanes. */
  WarmUp.Result send(int from, int to, IntFunction<Request> request) throws InterruptedException {
    int[] answered = new int[lanes];
    int[] failed = new int[lanes];
    int[] abandoned = new int[lanes];
    Thread[] threads = new Thread[lanes];
    long start = System.nanoTime();
    for (int lane = 0; lane < lanes; lane++) {
      int l = lane;
      threads[lane] = new Thread(() -> runLane(l, from, to, request, answered, failed, abandoned), "affinity-warm-up-" + lane);
      threads[lane].setDaemon(true);
      threads[lane].start();
    }
    int a = 0;
    int f = 0;
    int g = 0;
    for (int lane = 0; lane < lanes; lane++) {
      threads[lane].join();
      a += answered[lane];
      f += failed[lane];
      g += abandoned[lane];
    }
    return new WarmUp.Result(a, f, g, java.time.Duration.ofNanos(System.nanoTime() - start));
  }

  /** Lane {@code l} sends requests l, l + lanes, ... below {@code to}. */
  private void runLane(int l, int from, int to, IntFunction<Request> request, int[] answered, int[] failed, int[] abandoned) {
    String authority = "127.0.0.1:" + port;
    Shape[] shapes = Shape.values();
    int i = from + l;
    int connections = l;
    while (i < to) {
      int budget = PER_CONNECTION[connections % PER_CONNECTION.length];
      Shape shape = shapes[connections % shapes.length];
      connections++;
      try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
        s.setTcpNoDelay(true);
        s.setSoTimeout(60_000);
        OutputStream out = s.getOutputStream();
        InputStream in = new BufferedInputStream(s.getInputStream());
        for (int n = 0; n < budget && i < to; n++, i += lanes) {
          Request r = request.apply(i);
          byte[] body = r.body().getBytes(StandardCharsets.UTF_8);
          byte[] head = shape.head(r.path(), authority, body.length, r.headers()).getBytes(StandardCharsets.US_ASCII);
          if (shape.bodyApart) {
            out.write(head);
            out.flush();
            out.write(body);
          } else {
            byte[] whole = new byte[head.length + body.length];
            System.arraycopy(head, 0, whole, 0, head.length);
            System.arraycopy(body, 0, whole, head.length, body.length);
            out.write(whole);
          }
          out.flush();
          if (n == budget - 1 && connections % ABANDONING == 0) {
            abandoned[l]++;  // a client that gives up: the connection closes before the answer is read
          } else if (readAnswer(in) == 200) {
            answered[l]++;
          } else {
            failed[l]++;
          }
        }
      } catch (IOException e) {
        failed[l]++;
        i += lanes;  // the request that failed is not sent again
      }
    }
  }

  /** Sends one GET of {@code path} on a connection of its own; returns the status (-1: no answer). */
  int get(String path) {
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
      s.setSoTimeout(10_000);
      OutputStream out = s.getOutputStream();
      out.write(("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\nConnection: close\r\n\r\n")
          .getBytes(StandardCharsets.US_ASCII));
      out.flush();
      return readAnswer(new BufferedInputStream(s.getInputStream()));
    } catch (IOException e) {
      return -1;
    }
  }

  /** Reads one answer to its end; returns its status. */
  static int readAnswer(InputStream in) throws IOException {
    String status = line(in);
    if (!status.startsWith("HTTP/1.1 ") || status.length() < 12) {
      throw new IOException("not an HTTP/1.1 status line: " + status);
    }
    int code = Integer.parseInt(status.substring(9, 12));
    long length = -1;
    boolean chunked = false;
    for (String h = line(in); !h.isEmpty(); h = line(in)) {
      int colon = h.indexOf(':');
      String name = colon < 0 ? h : h.substring(0, colon).trim().toLowerCase(Locale.ROOT);
      String value = colon < 0 ? "" : h.substring(colon + 1).trim();
      if (name.equals("content-length")) {
        length = Long.parseLong(value);
      } else if (name.equals("transfer-encoding") && value.toLowerCase(Locale.ROOT).contains("chunked")) {
        chunked = true;
      }
    }
    if (chunked) {
      for (long size = Long.parseLong(line(in).split(";", 2)[0].trim(), 16); size > 0;
          size = Long.parseLong(line(in).split(";", 2)[0].trim(), 16)) {
        skip(in, size);
        line(in);
      }
      for (String trailer = line(in); !trailer.isEmpty(); trailer = line(in)) {
        // trailers are read and dropped
      }
    } else if (length > 0) {
      skip(in, length);
    }
    return code;
  }

  private static void skip(InputStream in, long n) throws IOException {
    in.skipNBytes(n);
  }

  private static String line(InputStream in) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream(64);
    for (int c = in.read(); c != '\n'; c = in.read()) {
      if (c < 0) {
        throw new IOException("the connection closed mid-answer");
      }
      if (c != '\r') {
        b.write(c);
      }
    }
    return b.toString(StandardCharsets.US_ASCII);
  }
}
