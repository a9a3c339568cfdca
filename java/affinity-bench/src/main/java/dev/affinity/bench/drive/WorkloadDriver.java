package dev.affinity.bench.drive;

import dev.affinity.bench.metrics.RequestRecord;
import dev.affinity.bench.trace.TraceRequest;
import dev.affinity.bench.workload.AgentCall;
import dev.affinity.bench.workload.AgentScript;
import dev.affinity.timer.Scheduler;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * Plays a workload through a {@link RequestTransport} on a {@link Scheduler}'s time (virtual in the
 * simulator, the wall clock live): an open-loop trace sends each request at its arrival time; closed-
 * loop agents send a call {@code thinkBeforeMs} after the previous call's response, start the
 * sub-agents a call spawns once its response is in, and go on only when all of them have finished.
 * Failed requests end their call like answered ones (the agent goes on).
 */
public final class WorkloadDriver {
  private final RequestTransport transport;
  private final Scheduler scheduler;
  private final IdealCache ideal;
  private final Consumer<RequestRecord> sink;
  private final AtomicLong sent = new AtomicLong();
  private final AtomicInteger planned = new AtomicInteger();
  private final AtomicInteger completed = new AtomicInteger();
  private final List<RequestRecord> records = new ArrayList<>();

  /** @param sink sees each record as it completes (progress); every record is also kept */
  public WorkloadDriver(RequestTransport transport, Scheduler scheduler, IdealCache ideal, Consumer<RequestRecord> sink) {
    this.transport = transport;
    this.scheduler = scheduler;
    this.ideal = ideal;
    this.sink = sink;
  }

  /** Schedules every request of an open-loop trace at its arrival time (ms from now). */
  public void startOpenLoop(List<TraceRequest> trace) {
    planned.addAndGet(trace.size());
    for (TraceRequest r : trace) {
      scheduler.schedule(() -> send(r, r.parentSessionId() != null ? r.parentSessionId() : r.sessionId(), rec -> { }), Duration.ofNanos(Math.round(r.arrivalMs() * 1e6)));
    }
  }

  /** Starts closed-loop agents, each at its {@code startMs} from now. */
  public void startClosedLoop(List<AgentScript> agents, int blockSize) {
    for (AgentScript a : agents) {
      planned.addAndGet(a.totalCalls());
      scheduler.schedule(() -> runCall(a, a.sessionId(), 0, blockSize, () -> { }),
          Duration.ofNanos(Math.round(a.startMs() * 1e6)));
    }
  }

  private void runCall(AgentScript agent, String agentId, int index, int blockSize, Runnable onDone) {
    if (index >= agent.calls().size()) {
      onDone.run();
      return;
    }
    AgentCall call = agent.calls().get(index);
    TraceRequest r = new TraceRequest(0, agent.sessionId(), agent.parentSessionId(), call.inputLength(), call.outputLength(),
        blockSize, call.hashIds());
    Runnable next = () -> runCall(agent, agentId, index + 1, blockSize, onDone);
    scheduler.schedule(() -> send(r, agentId, rec -> {
      List<AgentScript> spawns = call.spawns();
      if (spawns.isEmpty()) {
        next.run();
        return;
      }
      AtomicInteger running = new AtomicInteger(spawns.size());
      for (AgentScript sub : spawns) {
        runCall(sub, agentId, 0, blockSize, () -> {
          if (running.decrementAndGet() == 0) {
            next.run();
          }
        });
      }
    }), Duration.ofNanos(Math.round(call.thinkBeforeMs() * 1e6)));
  }

  /** Sends one request; a request without any session id is an agent of its own. */
  private void send(TraceRequest r, String agentId, Consumer<RequestRecord> then) {
    long index = sent.getAndIncrement();
    OutgoingRequest out = new OutgoingRequest(index, r, agentId != null ? agentId : "#" + index, ideal.reuse(r));
    transport.send(out, rec -> {
      synchronized (records) {
        records.add(rec);
      }
      completed.incrementAndGet();
      sink.accept(rec);
      then.accept(rec);
    });
  }

  /** Requests the workload will send in all. */
  public int planned() {
    return planned.get();
  }

  public int completed() {
    return completed.get();
  }

  /** Whether every planned request has completed. */
  public boolean finished() {
    return completed.get() >= planned.get();
  }

  /** The records so far, in send order. */
  public List<RequestRecord> records() {
    List<RequestRecord> copy;
    synchronized (records) {
      copy = new ArrayList<>(records);
    }
    copy.sort(java.util.Comparator.comparingLong(RequestRecord::index));
    return copy;
  }
}
