package dev.affinity.server.http;

import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;

/** Keeps every access record in memory. */
final class RecordingAccessLog implements AccessLog {
  private final ConcurrentLinkedQueue<AccessRecord> records = new ConcurrentLinkedQueue<>();
  volatile boolean closed;

  @Override
  public void log(AccessRecord record) {
    records.add(record);
  }

  @Override
  public void close() {
    closed = true;
  }

  List<AccessRecord> records() {
    return List.copyOf(records);
  }

  List<AccessRecord> forPath(String path) {
    return records.stream().filter(r -> r.path().equals(path)).toList();
  }

  AccessRecord last() {
    List<AccessRecord> all = records();
    if (all.isEmpty()) {
      throw new AssertionError("no access record");
    }
    return all.get(all.size() - 1);
  }
}
