package dev.affinity.server.metrics;

import dev.affinity.tokenizer.ModelTokenizer;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * Which encoder the frontend's model tokenizer used ({@code affinity_tokenizer_encodes_total{engine}}): texts encoded
 * by the Java byte-level BPE where it is exact, and by the Rust tokenizer (a model it does not cover, a text outside
 * its Unicode ranges, a completion prompt with special tokens).
 */
public final class TokenizerEncoderMeters {
  private TokenizerEncoderMeters() {}

  public static void register(MeterRegistry registry, ModelTokenizer tokenizer) {
    String description = "Texts the model tokenizer encoded, by engine (java: the byte-level BPE in Java; rust: the"
        + " Hugging Face tokenizer through DJL)";
    FunctionCounter.builder("affinity.tokenizer.encodes", tokenizer, t -> t.encoderCounts().java())
        .tag("engine", "java").description(description).register(registry);
    FunctionCounter.builder("affinity.tokenizer.encodes", tokenizer, t -> t.encoderCounts().rust())
        .tag("engine", "rust").description(description).register(registry);
  }
}
