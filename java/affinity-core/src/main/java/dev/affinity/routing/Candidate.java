package dev.affinity.routing;

import dev.affinity.worker.Worker;

/** A place a request can go: a worker, and one of its attention-DP ranks when they are visible (else -1). */
public record Candidate(Worker worker, int rank) {
  public String workerId() {
    return worker.id();
  }

  @Override
  public String toString() {
    return rank < 0 ? worker.id() : worker.id() + "#" + rank;
  }
}
