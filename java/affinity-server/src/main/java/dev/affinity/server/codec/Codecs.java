package dev.affinity.server.codec;

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
  /**
   * The model tokenizer a frontend routes with ({@code affinity.tokenizer}, or a router's {@code tokenizer_dir}), or
   * null when the configuration names none.
   *
   * @throws IllegalArgumentException naming the setting it came from when the directory does not load
   */
  public static Codecs forRouting(dev.affinity.config.DisaggConfig config) {
    java.util.Optional<dev.affinity.config.TokenizerSource> source = dev.affinity.config.TokenizerSource.of(config);
    if (source.isEmpty()) {
      return null;
    }
    Codecs codecs;
    try {
      codecs = of(ModelTokenizer.load(source.get().directory()));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(source.get().origin() + ": " + e.getMessage(), e);
    }
    org.slf4j.LoggerFactory.getLogger(Codecs.class).info("routing on the model's token ids: tokenizer {} (from {})",
        source.get().directory(), source.get().origin());
    return codecs;
  }

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

  /**
   * Whether every worker of {@code workers} (a list guarded by its own monitor) renders chats as this codec's model
   * tokenizer does, so a chat's ids may replace its messages on the legs: embedded workers share the codec; a remote
   * worker must report the same {@code render_fingerprint} digest in its {@code /server_info} (Affinity workers on
   * the same tokenizer do; stock workers use upstream's recipe, so chats reach them as text). False when there are no
   * workers or this codec has no renderer.
   */
  public boolean renderAlike(java.util.List<dev.affinity.worker.Worker> workers) {
    PromptRenderer renderer = renderer();
    if (renderer == null) {
      return false;
    }
    String mine = renderer.fingerprint();
    synchronized (workers) {
      if (workers.isEmpty()) {
        return false;
      }
      for (dev.affinity.worker.Worker w : workers) {
        if (w instanceof dev.affinity.server.worker.HttpWorker h) {
          com.fasterxml.jackson.databind.JsonNode info = h.serverInfo();
          if (info == null || !mine.equals(info.path("render_fingerprint").path("digest").asText(null))) {
            return false;
          }
        } else if (!(w instanceof dev.affinity.nativebridge.worker.NativeWorker n) || n.codec() != codec) {
          return false;
        }
      }
    }
    return true;
  }

  @Override
  public void close() {
    if (model != null) {
      model.close();
    }
  }
}
