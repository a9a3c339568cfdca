package dev.affinity.server.fleet;

import dev.affinity.admission.CodecPromptTokenizer;
import dev.affinity.admission.PromptTokenizer;
import dev.affinity.nativebridge.worker.NativeWorker;
import dev.affinity.server.codec.Codecs;
import dev.affinity.server.metrics.PromptPrefixMeters;
import dev.affinity.server.metrics.TimedPromptTokenizer;
import dev.affinity.server.metrics.TokenizerEncoderMeters;
import dev.affinity.tokenizer.ModelPromptTokenizer;
import dev.affinity.tokenizer.PromptPrefixes;
import dev.affinity.tokenizer.PromptRenderer;
import dev.affinity.worker.Worker;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Collection;
import java.util.List;

/**
 * The frontend's prompt tokenizer: the model's tokenizer and chat template ({@code affinity.tokenizer} naming a model's
 * directory), each conversation's last prompt kept for its next turn within {@code affinity.prompt_prefix_bytes}
 * ({@link PromptPrefixes}, in {@code /metrics}); else an embedded worker's codec; else only the ids clients send. Timed
 * ({@code affinity_tokenize_seconds}) unless it only takes the clients' ids.
 */
final class FrontendTokenizer {
  private FrontendTokenizer() {}

  /** The tokenizer, and the conversations' kept prompts it uses (null: none kept). */
  record Built(PromptTokenizer tokenizer, PromptPrefixes prefixes) {
    /** A session ended or expired: its kept prompt goes. */
    void sessionEnded(String conversationId) {
      if (prefixes != null) {
        prefixes.forget(conversationId);
      }
    }
  }

  /**
   * @param modelCodecs the model's codecs (null: none configured)
   * @param workers the fleet's workers, read when a chat's ids may go to them (they must render alike)
   * @param embedded the in-process workers
   */
  static Built create(Codecs modelCodecs, long prefixBytes, List<Worker> workers,
      Collection<List<NativeWorker>> embedded, MeterRegistry registry) {
    if (modelCodecs != null) {
      PromptRenderer renderer = new PromptRenderer(modelCodecs.renderer().tokenizer(), new PromptPrefixes(prefixBytes));
      PromptPrefixMeters.register(registry, renderer.prefixes());
      TokenizerEncoderMeters.register(registry, modelCodecs.renderer().tokenizer());
      return new Built(new TimedPromptTokenizer(new ModelPromptTokenizer(renderer,
          () -> modelCodecs.renderAlike(workers)), registry), renderer.prefixes());
    }
    return new Built(embedded.stream().flatMap(List::stream).findFirst()
        .<PromptTokenizer>map(w -> new TimedPromptTokenizer(new CodecPromptTokenizer(w::promptTokens, w.codec()), registry))
        .orElse(PromptTokenizer.CLIENT_IDS), null);
  }
}
