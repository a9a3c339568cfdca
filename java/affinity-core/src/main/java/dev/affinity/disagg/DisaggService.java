package dev.affinity.disagg;

import dev.affinity.agent.AgentScheduling;
import dev.affinity.config.AgentSettings;
import dev.affinity.frontend.AdmittedRequest;
import dev.affinity.frontend.ClientSink;
import dev.affinity.frontend.CompletionHandler;
import dev.affinity.routing.Router;
import dev.affinity.timer.Scheduler;
import dev.affinity.tracing.RequestTracer;
import java.util.Objects;

/**
 * Disaggregated orchestration, as TensorRT-LLM's disaggregated server does it
 * ({@code tensorrt_llm/serve/openai_disagg_server.py}): routes an admitted request's context leg and
 * generation leg with their fleets' routing keys, carries the context response's
 * {@code disaggregated_params} into the generation request, and relays the answer to the client. Each
 * request is a {@link RequestFlow}: a state machine that hears its two {@link Leg}s' events and carries out the steps
 * the configured {@link Schedule} ({@link ContextFirst}, {@link GenerationFirst} or {@link ConditionalDisagg}) and
 * the {@link RetryPolicy} decide.
 *
 * <ul>
 *   <li>Admission ({@link dev.affinity.admission.RequestAdmission}) happened before: nothing is checked
 *       or resolved again here.
 *   <li>Retries: up to {@code max_retries} on connection errors, 5xx and stalled workers, never on 4xx
 *       and never after the first streamed byte; each retry re-issues the request id and goes to another
 *       worker (upstream retries the same server). A failed generation leg restarts from the context leg,
 *       since its KV hand-off may already be spent.
 *   <li>Every router selection is released exactly once (success, error, timeout, cancellation, client
 *       disconnect), and a context whose generation never comes is freed.
 *   <li>The clock and scheduler are dependencies, so the fleet simulator runs this very code in virtual time.
 * </ul>
 */
public final class DisaggService implements CompletionHandler {
  private final FlowDeps deps;

  /** Without tracing: a client's own trace context still goes on to its workers ({@link RequestTracer#NONE}). */
  public DisaggService(DisaggSettings settings, Router ctxRouter, Router genRouter, RequestIds ids, Scheduler scheduler) {
    this(settings, ctxRouter, genRouter, ids, scheduler, RequestTracer.NONE, null);
  }

  /**
   * @param tracer told of every request's routing, legs, retries and ending (docs/tracing.md)
   * @param textTokenizer tokenizes the text of a stream cut mid-way, to continue it on another worker (the
   *     frontend's tokenizer with embedded workers); null when the frontend has none
   */
  public DisaggService(DisaggSettings settings, Router ctxRouter, Router genRouter, RequestIds ids, Scheduler scheduler,
      RequestTracer tracer, TextTokenizer textTokenizer) {
    this(settings, ctxRouter, genRouter, ids, scheduler, tracer, textTokenizer,
        new AgentScheduling(new AgentSettings(false, AgentSettings.DEFAULT_PROMOTION_SECONDS, false), 3600, System::nanoTime));
  }

  /**
   * @param agents agent-aware scheduling: request priorities and KV retention across tool calls
   *     (docs/agent-scheduling.md)
   */
  public DisaggService(DisaggSettings settings, Router ctxRouter, Router genRouter, RequestIds ids, Scheduler scheduler,
      RequestTracer tracer, TextTokenizer textTokenizer, AgentScheduling agents) {
    this.deps = new FlowDeps(Objects.requireNonNull(settings, "settings"), Objects.requireNonNull(ctxRouter, "ctxRouter"),
        Objects.requireNonNull(genRouter, "genRouter"), Objects.requireNonNull(ids, "ids"),
        Objects.requireNonNull(scheduler, "scheduler"), Schedule.of(settings), Objects.requireNonNull(tracer, "tracer"),
        textTokenizer, Objects.requireNonNull(agents, "agents"));
  }

  public Router contextRouter() {
    return deps.contextRouter();
  }

  public Router generationRouter() {
    return deps.generationRouter();
  }

  public DisaggSettings settings() {
    return deps.settings();
  }

  @Override
  public void handle(AdmittedRequest request, ClientSink sink) {
    new RequestFlow(deps, Objects.requireNonNull(request, "request"), Objects.requireNonNull(sink, "sink")).start();
  }

  /** Agent-aware scheduling (a simulator tells it a trace's stop reasons through {@link AgentScheduling#turnEnded}). */
  public AgentScheduling agents() {
    return deps.agents();
  }
}
