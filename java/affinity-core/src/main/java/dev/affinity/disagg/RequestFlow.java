package dev.affinity.disagg;

import dev.affinity.disagg.AttemptView.LegView;
import dev.affinity.frontend.AdmittedRequest;
import dev.affinity.frontend.ClientSink;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.frontend.RouteInfo.Placement;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Outcome;
import dev.affinity.routing.Selection;
import dev.affinity.tracing.RequestTrace;
import dev.affinity.tracing.TracedSink;
import dev.affinity.worker.EncodedResponse;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerReport;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One admitted request from its first attempt to the last byte, as one state machine. Every happening comes in as a
 * {@link FlowEvent} through {@link #on}, under one lock, and changes the state (the attempt's id, each leg as a
 * {@link LegView}, the held context, a failure awaiting its decision, the route); the {@link Schedule} (after a
 * failure the {@link RetryPolicy}) decides the next {@link Step} from an immutable view, and the flow carries it out,
 * until the step is to wait. Nothing it calls calls back: an event heard while a step runs waits in the queue. The
 * client hears exactly one ending.
 */
final class RequestFlow {
  private static final Logger log = LoggerFactory.getLogger(RequestFlow.class);

  private final FlowDeps deps;
  private final AdmittedRequest admitted;
  private final OpenAiRequest client;
  private final ClientSink sink;
  /** What the legs are built from (the client's request, or after a resume the stream's continuation). */
  private final LegInputs inputs;
  /** Plans a cut stream's continuation; null for a non-streamed request. */
  private final ResumePlanner resumes;
  private final ClientAnswer answer;
  private final LegSender sender;
  /** The request's trace (tracing off: {@link RequestTrace#NONE} or the client's trace context handed on). */
  private final RequestTrace trace;
  private final Object lock = new Object();
  private final Leg context;
  private final Leg generation;
  /** Events heard while a step ran, taken in order after it. */
  private final ArrayDeque<FlowEvent> events = new ArrayDeque<>(4);
  private boolean running;
  /** Whether the state changed since the last decision to wait. */
  private boolean decisionDue;
  /** The current attempt's disaggregated request id: re-issued on every retry. */
  private long requestId;
  private int retries;
  private LegView ctx = LegView.NONE;
  private LegView gen = LegView.NONE;
  /** A finished context whose KV waits for the generation leg; null when none. */
  private HeldContext heldContext;
  /** The worker that served the latest context leg (tokenizes a cut stream's text when the frontend cannot). */
  private Worker lastContextWorker;
  /** A failed leg of the current attempt, waiting for the retry policy's decision; null when none. */
  private FailureView failure;
  /** Whether the current attempt waits for its back-off before its first leg. */
  private boolean backingOff;
  private RouteInfo route = RouteInfo.of(0);
  private boolean done;
  private Runnable cancelTimeout = () -> { };

  RequestFlow(FlowDeps deps, AdmittedRequest admitted, ClientSink sink) {
    this.deps = deps;
    this.admitted = admitted;
    this.client = admitted.request();
    this.trace = deps.tracer().start(admitted);
    this.sink = TracedSink.of(sink, trace);
    this.inputs = new LegInputs(deps.settings(), admitted);
    this.sender = new LegSender(inputs, client, trace, deps.agents(), deps.contextRouter());
    StreamResume resume = client.isStreaming() ? new StreamResume() : null;
    this.answer = new ClientAnswer(this.sink, resume, deps.agents(), client.isStreaming());
    this.resumes = resume == null ? null
        : new ResumePlanner(resume, admitted, deps.textTokenizer(), deps.contextRouter(), this::on);
    this.context = new Leg(Fleet.CONTEXT, deps.contextRouter(), lock, trace, deps.agents(), this::on);
    this.generation = new Leg(Fleet.GENERATION, deps.generationRouter(), lock, trace, deps.agents(), this::on);
  }

  void start() {
    sender.arrive(admitted);
    synchronized (lock) {
      requestId = deps.ids().next();
      route = firstRoute();
      cancelTimeout = deps.scheduler().schedule(() -> on(new FlowEvent.TimedOut()), deps.settings().requestTimeout());
    }
    sink.onDisconnect(() -> on(new FlowEvent.Disconnected()));
    synchronized (lock) {
      decisionDue = true;
      run();
    }
  }

  /** Hears one event: applies it, then decides and carries out steps until the decision is to wait. */
  void on(FlowEvent event) {
    synchronized (lock) {
      events.add(event);
      run();
    }
  }

  /** Under the lock; an event heard while a step runs (on this thread) waits in the queue until the step is over. */
  private void run() {
    if (running) {
      return;
    }
    running = true;
    try {
      while (true) {
        FlowEvent event = events.poll();
        if (event != null) {
          apply(event);
          continue;
        }
        if (done || !decisionDue) {
          return;
        }
        Step step = failure != null ? RetryPolicy.decide(failure)
            : backingOff ? Step.WAIT : deps.schedule().decide(view());
        if (step instanceof Step.Wait) {
          decisionDue = false;
          return;
        }
        carryOut(step);
      }
    } finally {
      running = false;
    }
  }

  private AttemptView view() {
    boolean generationMayServe = gen.selection() != null
        || ctx.selection() == null && !ctx.sent() && generation.mayServe();
    return new AttemptView(requestId, ctx, gen, heldContext != null, answer.streamStarted(), generationMayServe,
        inputs.conversationId());
  }

  /** Whether a report of {@code attempt} still matters: the request is not over and was not re-issued. */
  private boolean current(long attempt) {
    return !done && attempt == requestId;
  }

  private void apply(FlowEvent event) {
    if (event instanceof FlowEvent.Selected s) {
      if (done) {
        s.selection().release(Outcome.CANCELLED);
      } else {
        update(s.fleet(), leg -> leg.selected(s.selection()));
      }
    } else if (event instanceof FlowEvent.NoWorker n) {
      if (!done) {
        fail(503, n.reason());
      }
    } else if (event instanceof FlowEvent.Chunk c) {
      if (current(c.attempt()) && c.fleet() == Fleet.GENERATION) {
        heldContext = null;  // the generation leg has the KV now
        Selection s = c.selection();
        answer.chunk(c.chunk(), route.withGeneration(Placement.of(s.worker().id(), s.rank())));
      }
      return;  // nothing to decide
    } else if (event instanceof FlowEvent.Answer a) {
      if (a.attempt() == requestId) {
        update(a.fleet(), leg -> leg.answered(a.answer()));
      }
      return;
    } else if (event instanceof FlowEvent.Completed c) {
      if (current(c.attempt())) {
        completed(c.fleet(), c.selection(), c.report());
      }
    } else if (event instanceof FlowEvent.Failed f) {
      if (current(f.attempt()) && failure == null) {
        failed(f.fleet(), f.selection(), f.failure());
      }
    } else if (event instanceof FlowEvent.TimedOut) {
      if (!done) {
        fail(504, "request timed out after " + deps.settings().requestTimeout().toMillis() + " ms");
      }
    } else if (event instanceof FlowEvent.Disconnected) {
      if (!done) {
        close(() -> { });  // nobody to tell
      }
    } else if (event instanceof FlowEvent.BackoffOver b) {
      if (current(b.attempt())) {
        backingOff = false;
      }
    } else if (event instanceof FlowEvent.Tokenized t) {
      if (current(t.attempt()) && failure != null && failure.tokenizing()) {
        failure = failure.planned(resumes.tokenized(t));
      }
    }
    decisionDue = true;
  }

  private void update(Fleet fleet, UnaryOperator<LegView> change) {
    if (fleet == Fleet.CONTEXT) {
      ctx = change.apply(ctx);
    } else {
      gen = change.apply(gen);
    }
  }

  private void completed(Fleet fleet, Selection s, WorkerReport report) {
    if (fleet == Fleet.CONTEXT) {
      deps.agents().contextDone(inputs.conversationId(), s, report.promptTokens(), report.reusedTokens());
      lastContextWorker = s.worker();
      route = route.withContext(ServedPlacement.context(s, report));
      ctx = ctx.completedNow();
    } else {
      heldContext = null;
      route = route.withGeneration(ServedPlacement.generation(s, report));
      gen = gen.completedNow();
    }
  }

  private void failed(Fleet fleet, Selection sel, WorkerFailure f) {
    failure = new FailureView(fleet, sel, f, retries, deps.settings().maxRetries(), answer.streamStarted(),
        resumes != null, null, false);
    if (f.kind() == WorkerFailure.Kind.TIMEOUT) {
      // a stalled worker is worth an operator's eye: the leg spent its whole share of the request's budget
      log.warn("request {}: {} leg on {} timed out: {}", requestId, failure.fleetName(), sel.worker().id(), f);
    } else {
      log.debug("request {}: {} leg on {} failed: {}", requestId, failure.fleetName(), sel.worker().id(), f);
    }
  }

  private void carryOut(Step step) {
    if (step instanceof Step.Select s) {
      (s.fleet() == Fleet.CONTEXT ? context : generation).select(inputs.routing(requestId, s.fleet()));
    } else if (step instanceof Step.SendContext s) {
      ctx = ctx.sentNow();
      sender.sendContext(context, requestId, ctx.selection(), s.params());
    } else if (step instanceof Step.HoldContext h) {
      heldContext = new HeldContext(ctx.selection().worker(), h.handoff());
    } else if (step instanceof Step.SendGeneration s) {
      gen = gen.sentNow();
      sender.sendGeneration(generation, requestId, gen.selection(), s.params(), s.promptIds(), s.promptIdsB64());
    } else if (step instanceof Step.DeliverWhole d) {
      close(() -> answer.whole(d.answer(), route));
    } else if (step instanceof Step.DeliverAnswer) {
      deliverAnswer();
    } else if (step instanceof Step.Fail f) {
      fail(f.status(), f.message());
    } else if (step instanceof Step.Retry r) {
      retry(r.resumed());
    } else if (step instanceof Step.PlanResume) {
      failure = failure.planned(resumes.plan(ctx.answer()));
    } else if (step instanceof Step.Tokenize t) {
      StreamResume.Plan plan = resumes.tokenize(t.text(), requestId, lastContextWorker);
      failure = plan == null ? failure.awaitingTokens() : failure.planned(plan);
    } else if (step instanceof Step.EndStream) {
      log.info("request {}: {} worker {} failed after the whole answer was streamed; ending the stream", requestId,
          failure.fleetName(), failure.selection().worker().id());
      close(() -> answer.endStream(route));
    } else if (step instanceof Step.EndCutStream e) {
      endCutStream(e.notResumed());
    } else {
      throw new IllegalStateException("unknown step " + step);
    }
  }

  /**
   * A new attempt of the request on other workers than the failed one's, counted as a retry; with {@code resumed} (a
   * cut stream's continuation) the legs are built from the continuation from now on.
   */
  private void retry(StreamResume.Plan resumed) {
    FailureView f = failure;
    failure = null;
    Worker failed = f.selection().worker();
    if (resumed != null) {
      log.info("request {}: {} worker {} failed mid-stream ({}); resuming after {} streamed tokens", requestId,
          f.fleetName(), failed.id(), f.failure(), resumed.generated());
    }
    retries++;
    trace.retried(retries, f.fleet(), failed.id(), f.failure());  // a resume is a retry
    if (resumed != null) {
      trace.resumed(resumed.generated());
    }
    Leg leg = f.fleet() == Fleet.CONTEXT ? context : generation;
    leg.exclude(failed.id());
    requestId = deps.ids().next();  // re-issued so that a worker never sees the id twice
    releaseHeldContext();
    cancelCalls();  // the other leg of the failed attempt (generation-first) is stale now
    releaseUnsent();
    ctx = LegView.NONE;
    gen = LegView.NONE;
    if (resumed != null) {
      inputs.resume(resumed);
      resumes.start(resumed);
    }
    route = firstRoute();
    if (leg.readmitIfOnlyLiveWorker(failed, f.failure())) {
      backOff(f);
    }
  }

  /**
   * The failed worker is the fleet's only live one and its failure was transient: the new attempt goes back to it
   * after the policy's back-off ({@link RetryPolicy#backoff}) instead of failing for want of a worker.
   */
  private void backOff(FailureView f) {
    Duration backoff = RetryPolicy.backoff(retries, inputs.legTimeout());
    log.info("request {}: {} worker {} failed ({}) and is the only live one; retrying there in {} ms", requestId,
        f.fleetName(), f.selection().worker().id(), f.failure(), backoff.toMillis());
    backingOff = true;
    long attempt = requestId;
    deps.scheduler().schedule(() -> on(new FlowEvent.BackoffOver(attempt)), backoff);
  }

  private RouteInfo firstRoute() {
    return inputs.firstRoute(requestId, retries);
  }

  /** The generation leg completed: the stream ends, or the whole answer goes out with the context's usage. */
  private void deliverAnswer() {
    EncodedResponse g = gen.answer();
    if (!client.isStreaming() && g == null) {
      fail(502, "generation worker " + gen.selection().worker().id() + " returned no response");
      return;
    }
    EncodedResponse c = ctx.answer();
    close(() -> answer.generationAnswer(g, c, inputs.conversationId(), route));
  }

  /** The stream cannot go on: the error ends it as its last event (the client has the status line and chunks). */
  private void endCutStream(String notResumed) {
    FailureView f = failure;
    Selection sel = f.selection();
    if (notResumed != null) {
      log.info("request {}: stream not resumed after {} worker {} failed: {}", requestId, f.fleetName(),
          sel.worker().id(), notResumed);
    }
    if (f.fleet() == Fleet.GENERATION) {
      route = route.withGeneration(Placement.of(sel.worker().id(), sel.rank()));  // the access log names it
    }
    String message = f.fleetName() + " worker " + sel.worker().id() + " failed mid-stream: " + f.failure();
    close(() -> answer.fail(502, message, route));
  }

  /** The request fails (after the stream started: as its last event). */
  private void fail(int status, String message) {
    close(() -> answer.fail(status, message, route));
  }

  /** Ends the request, tells the client ({@code ending}), and cancels what is still in flight. */
  private void close(Runnable ending) {
    end();
    ending.run();
    cancelCalls();
  }

  /**
   * Marks the request done: stops the timeout, releases a selection no leg was sent to and a context whose
   * generation will not come.
   */
  private void end() {
    done = true;
    failure = null;
    cancelTimeout.run();
    releaseUnsent();
    releaseHeldContext();
  }

  private void releaseUnsent() {
    for (LegView leg : new LegView[] {ctx, gen}) {
      if (leg.selection() != null && !leg.sent()) {
        leg.selection().release(Outcome.CANCELLED);
      }
    }
  }

  private void releaseHeldContext() {
    if (heldContext != null) {
      heldContext.worker().releaseContext(heldContext.params());
    }
    heldContext = null;
  }

  /** A finished context's KV, held by {@code worker} for the generation leg. */
  private record HeldContext(Worker worker, DisaggregatedParams params) {}

  private void cancelCalls() {
    context.cancel();
    generation.cancel();
  }
}
