package dev.affinity.disagg;

import dev.affinity.admission.PromptTokenizer;
import dev.affinity.frontend.AdmittedRequest;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.routing.Selection;
import dev.affinity.worker.EncodedResponse;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerFailure;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The retry and resume policy of one request: what happens when a leg of its current attempt fails. Before the
 * client has a byte, the request is retried from the start on other workers when the failure allows it (connection
 * errors, 5xx, a stalled worker; never 4xx; at most {@code max_retries} times), else the client hears why. A client
 * stream cut after its first byte is continued on other workers ({@link StreamResume}: a new attempt whose prompt is
 * the original prompt followed by the tokens the client has, counted as a retry), ended cleanly when the client
 * already has the whole answer, or ended with an error event. Runs under its flow's lock.
 */
final class FailedLegs {
  private static final Logger log = LoggerFactory.getLogger(FailedLegs.class);

  private final RequestFlow flow;
  private final DisaggService service;
  private final AdmittedRequest admitted;
  /** The client's own request (a resume rewrites what the legs are built from, never this). */
  private final OpenAiRequest client;
  private final StreamResume resume;

  /** {@code resume}: the relayed stream, or null for a request that is not streamed. */
  FailedLegs(RequestFlow flow, DisaggService service, AdmittedRequest admitted, StreamResume resume) {
    this.flow = flow;
    this.service = service;
    this.admitted = admitted;
    this.client = admitted.request();
    this.resume = resume;
  }

  /** {@code leg} of the current attempt failed where {@code sel} points. */
  void failed(Leg leg, Selection sel, WorkerFailure failure) {
    String fleet = leg.fleet().name().toLowerCase();
    if (failure.kind() == WorkerFailure.Kind.TIMEOUT) {
      // a stalled worker is worth an operator's eye: the leg spent its whole share of the request's budget
      log.warn("request {}: {} leg on {} timed out: {}", flow.requestId(), fleet, sel.worker().id(), failure);
    } else {
      log.debug("request {}: {} leg on {} failed: {}", flow.requestId(), fleet, sel.worker().id(), failure);
    }
    int retries = flow.retries();
    boolean afterBytes = failure.afterFirstByte() || flow.streamStarted();
    if (failure.retryable() && !afterBytes && retries < flow.settings().maxRetries()) {
      flow.retry(leg, sel, failure, null);
      return;
    }
    if (afterBytes) {
      if (!resumeStream(leg, sel, failure)) {
        flow.endCutStream(leg, sel, failure);
      }
      return;
    }
    int status = switch (failure.kind()) {
      case CLIENT_ERROR -> failure.status() >= 400 && failure.status() < 500 ? failure.status() : 400;
      case TIMEOUT -> 504;
      case CANCELLED -> 499;
      default -> 502;
    };
    flow.finishWithError(status, fleet + " worker " + sel.worker().id() + ": " + failure.message()
        + (retries > 0 ? " (after " + retries + (retries == 1 ? " retry)" : " retries)") : ""));
  }

  /** False when the stream cannot be continued; ends it cleanly when the client already has the whole answer. */
  private boolean resumeStream(Leg leg, Selection sel, WorkerFailure failure) {
    if (resume == null || !failure.resumable() || flow.retries() >= flow.settings().maxRetries()) {
      return false;
    }
    StreamResume.Plan plan = resume.plan(client, originalPromptIds(), null);
    if (plan.kind() == StreamResume.Kind.NEEDS_TOKENS) {
      TextTokenizer tokenizer = service.textTokenizer();
      Worker tokenizingWorker = tokenizer == null ? tokenizingWorker() : null;
      if (tokenizingWorker != null) {
        tokenizeThenResume(tokenizingWorker, plan.text(), leg, sel, failure);
        return true;
      }
      plan = tokenizer != null ? resume.plan(client, null, tokenizer.encode(plan.text()))
          : StreamResume.Plan.impossible("the workers streamed text and neither the frontend nor a context worker"
              + " can tokenize it");
    }
    return follow(plan, leg, sel, failure);
  }

  /**
   * The streamed text goes to a context worker's tokenizer first (the frontend has none); the stream continues when
   * the ids come back, unless the request ended meanwhile (timeout, client gone).
   */
  private void tokenizeThenResume(Worker worker, String text, Leg leg, Selection sel, WorkerFailure failure) {
    long attempt = flow.requestId();
    worker.tokenize(text).whenComplete((ids, error) -> {
      synchronized (flow.lock()) {
        if (!flow.isCurrent(attempt)) {
          return;
        }
        StreamResume.Plan plan = error == null && ids != null ? resume.plan(client, null, ids)
            : StreamResume.Plan.impossible("worker " + worker.id() + " could not tokenize the streamed text: " + error);
        if (!follow(plan, leg, sel, failure)) {
          flow.endCutStream(leg, sel, failure);
        }
      }
    });
  }

  /** Who tokenizes a cut stream's text: the worker that served the context leg, else any live context worker. */
  private Worker tokenizingWorker() {
    Worker last = flow.lastContextWorker();
    if (last != null && last.isAlive()) {
      return last;
    }
    return service.contextRouter().workers().stream().filter(Worker::isAlive).findFirst().orElse(null);
  }

  /** Carries out a resume plan; false when it cannot continue the stream. */
  private boolean follow(StreamResume.Plan plan, Leg leg, Selection sel, WorkerFailure failure) {
    String fleet = leg.fleet().name().toLowerCase();
    switch (plan.kind()) {
      case FINISHED -> {
        log.info("request {}: {} worker {} failed after the whole answer was streamed; ending the stream",
            flow.requestId(), fleet, sel.worker().id());
        flow.endStreamAfterCut();
        return true;
      }
      case CONTINUE -> {
        log.info("request {}: {} worker {} failed mid-stream ({}); resuming after {} streamed tokens", flow.requestId(),
            fleet, sel.worker().id(), failure, plan.generated());
        flow.retry(leg, sel, failure, plan);
        return true;
      }
      default -> {
        log.info("request {}: stream not resumed after {} worker {} failed: {}", flow.requestId(), fleet,
            sel.worker().id(), plan.reason());
        return false;
      }
    }
  }

  /** The client's prompt ids: admission's, the client's own, or those the context worker reported. */
  private int[] originalPromptIds() {
    EncodedResponse reported = flow.context().response();
    if (admitted.promptTokens() != null && (admitted.forwardTokens() || reported == null
        || reported.promptTokenIds() == null)) {
      return admitted.promptTokens();
    }
    int[] sent = PromptTokenizer.clientIds(client);
    if (sent != null) {
      return sent;
    }
    return reported != null && reported.promptTokenIds() != null ? reported.promptTokenIds().toArray() : null;
  }
}
