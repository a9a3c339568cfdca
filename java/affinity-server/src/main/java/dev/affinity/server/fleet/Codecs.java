package dev.affinity.server.fleet;

import dev.affinity.config.AffinitySettings;
import dev.affinity.nativebridge.worker.BpeTokenCodec;
import dev.affinity.tokenizer.HfTokenCodec;
import dev.affinity.tokenizer.ModelTokenizer;
import dev.affinity.tokenizer.PromptRenderer;
import dev.affinity.worker.TokenCodec;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The text-to-ids codec a tokenizer setting names ({@code affinity.tokenizer}, {@code affinity worker --tokenizer}):
 * a BPE encoding ({@link BpeTokenCodec}), or a model's tokenizer directory ({@link HfTokenCodec} over a
 * {@link ModelTokenizer}, which the returned value owns: close it).
 *
 * @param codec the codec
 * @param model the model tokenizer behind it, or null for a BPE encoding
 */
public record Codecs(TokenCodec codec, ModelTokenizer model) implements AutoCloseable {

  /**
   * @throws IllegalArgumentException naming the setting when it is neither a known encoding nor a tokenizer
   *     directory
   */
  public static Codecs open(String setting) {
    if (AffinitySettings.isBpeEncoding(setting)) {
      return new Codecs(new BpeTokenCodec(setting), null);
    }
    Path dir = Path.of(setting);
    if (!Files.isDirectory(dir)) {
      throw new IllegalArgumentException("tokenizer \"" + setting + "\" is neither a BPE encoding ("
          + String.join(", ", AffinitySettings.BPE_ENCODINGS) + ") nor a model's tokenizer directory");
    }
    return of(ModelTokenizer.load(dir));
  }

  /** The codec of a loaded model tokenizer (owned by the result). */
  public static Codecs of(ModelTokenizer model) {
    return new Codecs(new HfTokenCodec(model), model);
  }

  /** The chat renderer of a model tokenizer's codec, or null for a BPE encoding. */
  public PromptRenderer renderer() {
    return codec instanceof HfTokenCodec h ? h.renderer() : null;
  }

  @Override
  public void close() {
    if (model != null) {
      model.close();
    }
  }
}
