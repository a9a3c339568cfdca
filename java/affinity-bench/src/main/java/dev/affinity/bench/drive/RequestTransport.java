package dev.affinity.bench.drive;

import dev.affinity.bench.metrics.RequestRecord;
import java.util.function.Consumer;

/** Sends a driver's requests: into a simulated fleet, or over HTTP to a running frontend. */
public interface RequestTransport {
  /** Sends {@code request} now; calls {@code done} exactly once with what happened to it. */
  void send(OutgoingRequest request, Consumer<RequestRecord> done);
}
