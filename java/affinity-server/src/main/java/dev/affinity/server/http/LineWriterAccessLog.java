package dev.affinity.server.http;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes access records as JSON lines from one daemon thread, so event loops never wait on the disk.
 * The queue is bounded; when it is full a record is dropped and counted ({@link #dropped()}), and a
 * warning is logged once per 10,000 drops. {@link #close} writes what is queued and flushes.
 */
final class LineWriterAccessLog implements AccessLog {
  private static final Logger LOG = LoggerFactory.getLogger(LineWriterAccessLog.class);
  static final int QUEUE_CAPACITY = 65_536;

  private final BlockingQueue<String> queue = new ArrayBlockingQueue<>(QUEUE_CAPACITY);
  private final OutputStream out;
  private final String name;
  private final boolean closeStream;
  private final Thread writer;
  private final AtomicLong dropped = new AtomicLong();
  private volatile boolean closed;

  LineWriterAccessLog(OutputStream out, String name, boolean closeStream) {
    this.out = new BufferedOutputStream(out, 64 * 1024);
    this.name = name;
    this.closeStream = closeStream;
    this.writer = new Thread(this::drainLoop, "affinity-access-log");
    writer.setDaemon(true);
    writer.start();
  }

  @Override
  public void log(AccessRecord record) {
    if (closed) {
      return;
    }
    if (!queue.offer(record.toJson())) {
      long n = dropped.incrementAndGet();
      if (n % 10_000 == 1) {
        LOG.warn("access log {} cannot keep up: {} records dropped so far", name, n);
      }
    }
  }

  /** Records dropped because the queue was full. */
  long dropped() {
    return dropped.get();
  }

  private void drainLoop() {
    List<String> batch = new ArrayList<>();
    try {
      while (!closed || !queue.isEmpty()) {
        String first = queue.poll(100, TimeUnit.MILLISECONDS);
        if (first == null) {
          continue;
        }
        batch.add(first);
        queue.drainTo(batch);
        write(batch);
        batch.clear();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void write(List<String> lines) {
    try {
      for (String line : lines) {
        out.write(line.getBytes(StandardCharsets.UTF_8));
        out.write('\n');
      }
      out.flush();
    } catch (IOException e) {
      LOG.warn("cannot write the access log {}: {}", name, e.toString());
    }
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      writer.join(TimeUnit.SECONDS.toMillis(5));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    try {
      out.flush();
      if (closeStream) {
        out.close();
      }
    } catch (IOException e) {
      LOG.warn("cannot close the access log {}: {}", name, e.toString());
    }
  }
}
