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
  private final PooledCache pooled;
  private final Consumer<RequestRecord> sink;
  private final AtomicLong sent = new AtomicLong();
  private final AtomicInteger planned = new AtomicInteger();
  private final AtomicInteger completed = new AtomicInteger();
  private final List<RequestRecord> records = new ArrayList<>();

  /** A driver that computes no pooled bound. */
  public WorkloadDriver(RequestTransport transport, Scheduler scheduler, IdealCache ideal, Consumer<RequestRecord> sink) {
    this(transport, scheduler, ideal, PooledCache.unknown(), sink);
  }

  /**
   * @param ideal  the infinite-cache ideal, over the requests in send order
   * @param pooled the pooled bound, over the requests in send order
   * @param sink   sees each record as it completes (progress); every record is also kept
   */
  public WorkloadDriver(RequestTransport transport, Scheduler scheduler, IdealCache ideal, PooledCache pooled,
      Consumer<RequestRecord> sink) {
    this.transport = transport;
    this.scheduler = scheduler;
    this.ideal = ideal;
    this.pooled = pooled;
    this.sink = sink;
  }

  /** Schedules every request of an open-loop trace at its arrival time (ms from now). */
  public void startOpenLoop(List<TraceRequest> trace) {
    planned.addAndGet(trace.size());
    for (TraceRequest r : trace) {
      scheduler.schedule(() -> send(r, r.parentSessionId() != null ? r.parentSessionId() : r.sessionId(), rec -> { }), Duration.ofNanos(Math.round(r.arrivalMs() * 1e6)));
    }
  }

  /** Starts closed-loop agents, each at its {@code startMs} from now; think times follow sub-agents. */
  public void startClosedLoop(List<AgentScript> agents, int blockSize) {
    startClosedLoop(agents, blockSize, false);
  }

  /**
   * Starts closed-loop agents, each at its {@code startMs} from now.
   *
   * @param thinkDuringSubAgents false: after a call that spawned sub-agents, the next call waits for
   *     them, then its think time; true: its think time runs from the response, alongside them, and it
   *     is sent when both are over
   */
  public void startClosedLoop(List<AgentScript> agents, int blockSize, boolean thinkDuringSubAgents) {
    for (AgentScript a : agents) {
      planned.addAndGet(a.totalCalls());
      scheduler.schedule(() -> proceed(a, a.sessionId(), 0, a.initialSpawns(), blockSize, thinkDuringSubAgents, () -> { }),
          Duration.ofNanos(Math.round(a.startMs() * 1e6)));
    }
  }

  /** Runs {@code spawns}, then the agent's call {@code index} (or {@code onDone} when it has no more). */
  private void proceed(AgentScript agent, String agentId, int index, List<AgentScript> spawns, int blockSize,
      boolean thinkDuringSubAgents, Runnable onDone) {
    boolean last = index >= agent.calls().size();
    boolean overlap = thinkDuringSubAgents && !last && !spawns.isEmpty();
    Runnable call = () -> {
      if (last) {
        onDone.run();
      } else {
        scheduler.schedule(() -> send(agent, agentId, index, blockSize, thinkDuringSubAgents, onDone),
            overlap ? Duration.ZERO : think(agent, index));
      }
    };
    if (spawns.isEmpty()) {
      call.run();
      return;
    }
    AtomicInteger running = new AtomicInteger(spawns.size() + (overlap ? 1 : 0));
    Runnable part = () -> {
      if (running.decrementAndGet() == 0) {
        call.run();
      }
    };
    if (overlap) {
      scheduler.schedule(part, think(agent, index));
    }
    for (AgentScript sub : spawns) {
      proceed(sub, agentId, 0, sub.initialSpawns(), blockSize, thinkDuringSubAgents, part);
    }
  }

  private static Duration think(AgentScript agent, int index) {
    return Duration.ofNanos(Math.round(agent.calls().get(index).thinkBeforeMs() * 1e6));
  }

  /** Sends call {@code index}; its response starts the sub-agents it spawns, then the next call. */
  private void send(AgentScript agent, String agentId, int index, int blockSize, boolean thinkDuringSubAgents,
      Runnable onDone) {
    AgentCall call = agent.calls().get(index);
    TraceRequest r = new TraceRequest(0, agent.sessionId(), agent.parentSessionId(), call.inputLength(), call.outputLength(),
        blockSize, call.hashIds(), call.stopReason());
    send(r, agentId, rec -> proceed(agent, agentId, index + 1, call.spawns(), blockSize, thinkDuringSubAgents, onDone));
  }

  /** Sends one request; a request without any session id is an agent of its own. */
  private void send(TraceRequest r, String agentId, Consumer<RequestRecord> then) {
    long index = sent.getAndIncrement();
    OutgoingRequest out = new OutgoingRequest(index, r, agentId != null ? agentId : "#" + index, ideal.reuse(r),
        pooled.reuse(r));
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
