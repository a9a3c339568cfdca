package dev.affinity.server.fleet;

import dev.affinity.config.DisaggConfig;
import dev.affinity.config.ServerSection;
import dev.affinity.worker.Worker;
import java.util.List;

/** Builds the remote (HTTP) workers of a fleet from its {@code urls}. */
final class RemoteWorkers {
  private RemoteWorkers() {}

  static List<Worker> create(ServerSection section, DisaggConfig config) {
    throw new UnsupportedOperationException(section.name() + ": workers over HTTP (urls) are not wired in yet");
  }
}
