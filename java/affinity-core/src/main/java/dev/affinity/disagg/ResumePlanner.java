package dev.affinity.disagg;

import dev.affinity.admission.PromptTokenizer;
import dev.affinity.frontend.AdmittedRequest;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.TokenIds;
import dev.affinity.routing.Router;
import dev.affinity.worker.EncodedResponse;
import dev.affinity.worker.Worker;
import java.util.function.Consumer;

/**
 * Plans the continuation of a cut stream ({@link StreamResume}) for its flow: from the relayed chunks and the prompt's
 * ids, with the streamed text's ids when the chunks did not carry them (the frontend's tokenizer at once, else a
 * context worker's, reported to the flow as {@link FlowEvent.Tokenized}). Runs under its flow's lock.
 */
final class ResumePlanner {
  private final StreamResume resume;
  private final AdmittedRequest admitted;
  /** The client's own request (a resume rewrites what the legs are built from, never this). */
  private final OpenAiRequest client;
  private final TextTokenizer tokenizer;
  private final Router contextRouter;
  private final Consumer<FlowEvent> events;

  /**
   * @param tokenizer the frontend's tokenizer, or null when it has none
   * @param events where a worker's tokenization is reported
   */
  ResumePlanner(StreamResume resume, AdmittedRequest admitted, TextTokenizer tokenizer, Router contextRouter,
      Consumer<FlowEvent> events) {
    this.resume = resume;
    this.admitted = admitted;
    this.client = admitted.request();
    this.tokenizer = tokenizer;
    this.contextRouter = contextRouter;
    this.events = events;
  }

  /** The first plan; {@code reported}: the current attempt's context answer, or null. */
  StreamResume.Plan plan(EncodedResponse reported) {
    return resume.plan(client, originalPrompt(reported), null);
  }

  /**
   * The plan with the streamed {@code text}'s ids: the frontend's tokenizer's now; null while a context worker
   * tokenizes it for {@code attempt} ({@code lastContextWorker} first, else any live one); impossible when none can.
   */
  StreamResume.Plan tokenize(String text, long attempt, Worker lastContextWorker) {
    if (tokenizer != null) {
      return resume.plan(client, null, tokenizer.encode(text));
    }
    Worker worker = lastContextWorker != null && lastContextWorker.isAlive() ? lastContextWorker
        : contextRouter.workers().stream().filter(Worker::isAlive).findFirst().orElse(null);
    if (worker == null) {
      return StreamResume.Plan.impossible(
          "the workers streamed text and neither the frontend nor a context worker can tokenize it");
    }
    worker.tokenize(text).whenComplete((ids, error) -> events.accept(
        new FlowEvent.Tokenized(attempt, worker.id(), ids, error)));
    return null;
  }

  /** The plan once a worker tokenized the text (or could not). */
  StreamResume.Plan tokenized(FlowEvent.Tokenized t) {
    return t.ids() != null && t.error() == null ? resume.plan(client, null, t.ids())
        : StreamResume.Plan.impossible("worker " + t.workerId() + " could not tokenize the streamed text: "
            + t.error());
  }

  /** The continuation of {@code plan} starts now. */
  void start(StreamResume.Plan plan) {
    resume.start(plan);
  }

  /**
   * The client's prompt ids: admission's, the client's own, or those the context worker reported (as an array, or as
   * base64 int32 when the leg asked for them so).
   */
  private int[] originalPrompt(EncodedResponse reported) {
    if (admitted.promptTokens() != null && (admitted.forwardTokens() || reported == null
        || reported.promptTokenIds() == null)) {
      return admitted.promptTokens();
    }
    int[] sent = PromptTokenizer.clientIds(client);
    if (sent != null) {
      return sent;
    }
    if (reported == null) {
      return null;
    }
    if (reported.promptTokenIds() != null) {
      return reported.promptTokenIds().toArray();
    }
    return reported.promptTokenIdsB64() == null ? null
        : TokenIds.fromBase64(reported.promptTokenIdsB64(), "prompt_token_ids_b64").toArray();
  }
}
