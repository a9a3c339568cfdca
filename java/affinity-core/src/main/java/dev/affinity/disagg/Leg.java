package dev.affinity.disagg;

import dev.affinity.agent.AgentPriority;
import dev.affinity.executor.KvRetention;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.NoWorkerAvailableException;
import dev.affinity.routing.Outcome;
import dev.affinity.routing.Router;
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

/**
 * One side (context or generation) of a request: chooses a worker through its fleet's router, sends the
 * leg, and turns the worker's callbacks into the flow's events. Every selection is released exactly once
 * (when its call completes, fails or is cancelled; a reserved one that is never sent, on
 * {@link #releaseReserved}); callbacks of an attempt the flow has moved past are ignored, and a worker that
 * failed is excluded from this request's later attempts. Confined to the flow's lock.
 */
final class Leg {
  /** What the flow does with a leg's events (called under the flow's lock, for the current attempt only). */
  interface Events {
    /** A streamed chunk. */
    default void onEncodedChunk(Selection sel, EncodedChunk chunk) {}

    /** The worker finished the leg; {@link #response()} holds its whole answer, if it sent one. */
    void onComplete(Selection sel, WorkerReport report);
  }

  private final RequestFlow flow;
  private final Fleet fleet;
  private final Router router;
  /** Workers that failed this request: its retries go elsewhere. */
  private final Set<String> excluded = new HashSet<>();
  private WorkerCall call;
  private EncodedResponse response;
  /** A worker chosen ahead of its leg (conditional disaggregation chooses generation before context). */
  private Selection reserved;

  Leg(RequestFlow flow, Fleet fleet, Router router) {
    this.flow = flow;
    this.fleet = fleet;
    this.router = router;
  }

  Fleet fleet() {
    return fleet;
  }

  /** The router's choice for the current attempt, or null after failing the request with 503 (no worker). */
  Selection select() {
    RequestTrace.Routing traced = flow.trace().routing(fleet);
    try {
      Selection sel = router.select(flow.routing(fleet), excluded);
      traced.selected(sel);
      return sel;
    } catch (NoWorkerAvailableException e) {
      traced.noWorker(e.getMessage());
      flow.finishWithError(503, e.getMessage());
      return null;
    }
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

  /** Sends this leg of the current attempt to the selected worker. */
  void send(Selection sel, OpenAiRequest body, Events events) {
    send(sel, body, null, null, events);
  }

  /**
   * Sends this leg of the current attempt to the selected worker, with the agent-priority record its body's priority
   * came from (ended when the leg ends; null: none) and its KV retention (null: none).
   */
  void send(Selection sel, OpenAiRequest body, AgentPriority.Leg prioritized, KvRetention retention, Events events) {
    long attempt = flow.requestId();
    response = null;
    RequestTrace.LegTrace traced = flow.trace().legSent(fleet, attempt, sel);
    WorkerRequest request = new WorkerRequest(attempt, body, flow.inputs().affinityFor(fleet), sel.rank(), flow.inputs().legTimeout(),
        flow.inputs().cacheSalt(), traced.context(), retention);
    Listener listener = new Listener(sel, attempt, request, events, traced, prioritized);
    WorkerCall sent = sel.worker().send(request, listener);
    if (!listener.ended && flow.isCurrent(attempt)) {
      call = sent;  // a call that already ended (a worker answering on this thread) has nothing left to cancel
    }
  }

  /** The whole answer of this leg's latest call (null when none came, or for a streamed leg). */
  EncodedResponse response() {
    return response;
  }

  /** Cancels the call in flight, if any (its selection is released by the call's own failure callback). */
  void cancel() {
    WorkerCall c = detach();
    if (c != null) {
      c.cancel();
    }
  }

  /** Forgets the call in flight without cancelling it and returns it (null when none). */
  WorkerCall detach() {
    WorkerCall c = call;
    call = null;
    return c;
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

  void reserve(Selection sel) {
    reserved = sel;
  }

  /** The reserved selection, now owned by the caller; null when none. */
  Selection takeReserved() {
    Selection r = reserved;
    reserved = null;
    return r;
  }

  void releaseReserved() {
    Selection r = takeReserved();
    if (r != null) {
      r.release(Outcome.CANCELLED);
    }
  }

  /**
   * A worker's callbacks for one call: every one under the flow's lock. The answer is held to its leg's contract
   * ({@link AnswerContract}): a completed call whose answer lacks what the leg requires ends as the worker's failure
   * instead; a stream's chunks without a choice are withheld until one with a choice comes (so a stream of none ends
   * before the client has a byte).
   */
  private final class Listener implements WorkerListener {
    private final Selection sel;
    private final long attempt;
    private final WorkerRequest request;
    private final Events events;
    private final RequestTrace.LegTrace traced;
    private final AgentPriority.Leg prioritized;
    private boolean ended;
    /** This call's whole answer, when it sent one. */
    private EncodedResponse answer;
    /** Whether a streamed chunk with a choice came (the chunks before it are withheld until then). */
    private boolean choiceStreamed;
    /** Choiceless chunks that came before the first with a choice, in order; null when none. */
    private List<Runnable> withheld;

    Listener(Selection sel, long attempt, WorkerRequest request, Events events, RequestTrace.LegTrace traced,
        AgentPriority.Leg prioritized) {
      this.sel = sel;
      this.attempt = attempt;
      this.request = request;
      this.events = events;
      this.traced = traced;
      this.prioritized = prioritized;
    }

    @Override
    public void onEncodedChunk(EncodedChunk chunk) {
      synchronized (flow.lock()) {
        traced.chunk();
        if (flow.isCurrent(attempt)) {
          relay(choiceStreamed || AnswerContract.carriesChoice(chunk), () -> events.onEncodedChunk(sel, chunk));
        }
      }
    }

    /** Hands a chunk on, after those withheld; a chunk before the stream's first choice is withheld. */
    private void relay(boolean choice, Runnable delivery) {
      if (!choice) {
        if (withheld == null) {
          withheld = new ArrayList<>(2);
        }
        withheld.add(delivery);
        return;
      }
      choiceStreamed = true;
      List<Runnable> earlier = withheld;
      withheld = null;
      if (earlier != null) {
        for (Runnable d : earlier) {
          d.run();
          if (!flow.isCurrent(attempt)) {
            return;
          }
        }
      }
      delivery.run();
    }

    @Override
    public void onEncodedResponse(EncodedResponse r) {
      synchronized (flow.lock()) {
        answer = r;
        if (attempt == flow.requestId()) {
          response = r;
        }
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
      synchronized (flow.lock()) {
        String fault = contractFault();
        if (fault != null) {
          onError(AnswerContract.failure(fault));  // the worker's failure: released, traced and retried as one
          return;
        }
        ended = true;
        sel.release(Outcome.SUCCESS);
        flow.agentLegEnded(prioritized);
        traced.completed(report);
        if (flow.isCurrent(attempt)) {
          call = null;
          events.onComplete(sel, report);
        }
      }
    }

    @Override
    public void onError(WorkerFailure failure) {
      synchronized (flow.lock()) {
        ended = true;
        sel.release(failure.kind() == WorkerFailure.Kind.CANCELLED ? Outcome.CANCELLED : Outcome.FAILURE);
        flow.agentLegEnded(prioritized);
        traced.failed(failure);
        if (flow.isCurrent(attempt)) {
          call = null;
          flow.legFailed(Leg.this, sel, failure);
        }
      }
    }
  }
}
