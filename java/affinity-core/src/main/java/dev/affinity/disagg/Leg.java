package dev.affinity.disagg;

import dev.affinity.agent.AgentPriority;
import dev.affinity.agent.AgentScheduling;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.NoWorkerAvailableException;
import dev.affinity.routing.Outcome;
import dev.affinity.routing.Router;
import dev.affinity.routing.RoutingRequest;
import dev.affinity.routing.Selection;
import dev.affinity.tracing.RequestTrace;
import dev.affinity.worker.EncodedChunk;
import dev.affinity.worker.EncodedResponse;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerCall;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerListener;
import dev.affinity.worker.WorkerReport;
import dev.affinity.worker.WorkerRequest;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;

/**
 * One side (context or generation) of a request: asks its fleet's router for a worker, sends the leg, and reports
 * what happens as {@link FlowEvent}s to the one consumer it was given (its flow); it never decides. Every selection
 * it sends is released exactly once, when its call completes, fails or is cancelled; a worker's answer is held to its
 * leg's contract ({@link AnswerContract}) before it counts as completed; a worker that failed is excluded from this
 * request's later attempts. Confined to the flow's lock: a worker's callbacks take it.
 */
final class Leg {
  private final Fleet fleet;
  private final Router router;
  private final Object lock;
  private final RequestTrace trace;
  private final AgentScheduling agents;
  private final Consumer<FlowEvent> events;
  /** Workers that failed this request: its retries go elsewhere. */
  private final Set<String> excluded = new HashSet<>();
  /** The call in flight and its listener (null when none). */
  private WorkerCall call;
  private Listener inFlight;

  /**
   * @param lock the flow's lock, taken by every worker callback
   * @param events where the leg reports (called under {@code lock})
   */
  Leg(Fleet fleet, Router router, Object lock, RequestTrace trace, AgentScheduling agents,
      Consumer<FlowEvent> events) {
    this.fleet = fleet;
    this.router = router;
    this.lock = lock;
    this.trace = trace;
    this.agents = agents;
    this.events = events;
  }

  Fleet fleet() {
    return fleet;
  }

  /** Asks the router for a worker for {@code routing}: reports {@link FlowEvent.Selected} or {@link FlowEvent.NoWorker}. */
  void select(RoutingRequest routing) {
    RequestTrace.Routing traced = trace.routing(fleet);
    FlowEvent outcome;
    try {
      Selection sel = router.select(routing, excluded);
      traced.selected(sel);
      outcome = new FlowEvent.Selected(fleet, sel);
    } catch (NoWorkerAvailableException e) {
      traced.noWorker(e.getMessage());
      outcome = new FlowEvent.NoWorker(fleet, e.getMessage());
    }
    events.accept(outcome);
  }

  /**
   * Whether this leg's fleet could take a request now: a live worker, or no worker known at all (a fleet the
   * configuration leaves empty, which a request may never need). Checked before the other leg runs, so a request
   * whose second leg has nowhere to go is refused before its first leg spends anything.
   */
  boolean mayServe() {
    List<Worker> known = router.workers();
    if (known.isEmpty()) {
      return true;
    }
    for (Worker w : known) {
      if (w.isAlive() && !excluded.contains(w.id())) {
        return true;
      }
    }
    return false;
  }

  /**
   * Sends {@code request} to the selected worker, with the agent-priority record its body's priority came from
   * (ended when the leg ends; null: none).
   */
  void send(Selection sel, WorkerRequest request, RequestTrace.LegTrace traced, AgentPriority.Leg prioritized) {
    Listener listener = new Listener(sel, request, traced, prioritized);
    inFlight = listener;
    WorkerCall sent = sel.worker().send(request, listener);
    if (inFlight == listener) {
      call = sent;  // a call that already ended (a worker answering on this thread) has nothing left to cancel
    }
  }

  /** Cancels the call in flight, if any (its selection is released by the call's own failure callback). */
  void cancel() {
    WorkerCall c = call;
    call = null;
    inFlight = null;
    if (c != null) {
      c.cancel();
    }
  }

  void exclude(String workerId) {
    excluded.add(workerId);
  }

  /**
   * After {@code worker} failed this request with {@code failure} and was excluded: when the failure is transient
   * ({@link WorkerFailure#transientOnWorker}), the worker is still alive and no other live worker of the fleet is
   * left, takes it back (the request retries there rather than finding no worker) and returns true.
   */
  boolean readmitIfOnlyLiveWorker(Worker worker, WorkerFailure failure) {
    if (!failure.transientOnWorker() || !worker.isAlive() || mayServe()) {
      return false;
    }
    excluded.remove(worker.id());
    return true;
  }

  /**
   * A worker's callbacks for one call, each under the flow's lock, reported with the call's attempt. The answer is
   * held to its leg's contract ({@link AnswerContract}): a completed call whose answer lacks what the leg requires
   * ends as the worker's failure instead; a stream's chunks without a choice are withheld until one with a choice
   * comes (so a stream of none ends before the client has a byte).
   */
  private final class Listener implements WorkerListener {
    private final Selection sel;
    private final long attempt;
    private final WorkerRequest request;
    private final RequestTrace.LegTrace traced;
    private final AgentPriority.Leg prioritized;
    /** This call's whole answer, when it sent one. */
    private EncodedResponse answer;
    /** Whether a streamed chunk with a choice came (the chunks before it are withheld until then). */
    private boolean choiceStreamed;
    /** Choiceless chunks that came before the first with a choice, in order; null when none. */
    private List<EncodedChunk> withheld;

    Listener(Selection sel, WorkerRequest request, RequestTrace.LegTrace traced, AgentPriority.Leg prioritized) {
      this.sel = sel;
      this.attempt = request.requestId();
      this.request = request;
      this.traced = traced;
      this.prioritized = prioritized;
    }

    @Override
    public void onEncodedChunk(EncodedChunk chunk) {
      synchronized (lock) {
        traced.chunk();
        if (!choiceStreamed && !AnswerContract.carriesChoice(chunk)) {
          if (withheld == null) {
            withheld = new ArrayList<>(2);
          }
          withheld.add(chunk);
          return;
        }
        choiceStreamed = true;
        if (withheld != null) {
          for (EncodedChunk earlier : withheld) {
            events.accept(new FlowEvent.Chunk(fleet, attempt, sel, earlier));
          }
          withheld = null;
        }
        events.accept(new FlowEvent.Chunk(fleet, attempt, sel, chunk));
      }
    }

    @Override
    public void onEncodedResponse(EncodedResponse r) {
      synchronized (lock) {
        answer = r;
        events.accept(new FlowEvent.Answer(fleet, attempt, r));
      }
    }

    /** What the completed call's answer lacks ({@link AnswerContract}), or null. */
    private String contractFault() {
      if (request.streaming()) {
        return choiceStreamed ? null : AnswerContract.NO_STREAMED_CHOICE;
      }
      return answer == null ? AnswerContract.NO_ANSWER : AnswerContract.fault(request.leg(), answer);
    }

    @Override
    public void onComplete(WorkerReport report) {
      synchronized (lock) {
        String fault = contractFault();
        if (fault != null) {
          onError(AnswerContract.failure(fault));  // the worker's failure: released, traced and retried as one
          return;
        }
        ended();
        sel.release(Outcome.SUCCESS);
        agents.legEnded(prioritized);
        traced.completed(report);
        events.accept(new FlowEvent.Completed(fleet, attempt, sel, report));
      }
    }

    @Override
    public void onError(WorkerFailure failure) {
      synchronized (lock) {
        ended();
        sel.release(failure.kind() == WorkerFailure.Kind.CANCELLED ? Outcome.CANCELLED : Outcome.FAILURE);
        agents.legEnded(prioritized);
        traced.failed(failure);
        events.accept(new FlowEvent.Failed(fleet, attempt, sel, failure));
      }
    }

    /** The call is over: nothing is left to cancel. */
    private void ended() {
      if (inFlight == this) {
        inFlight = null;
        call = null;
      }
    }
  }
}
