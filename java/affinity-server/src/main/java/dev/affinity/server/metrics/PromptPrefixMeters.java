package dev.affinity.server.metrics;

import dev.affinity.tokenizer.PromptPrefixes;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.function.ToDoubleFunction;

/**
 * The frontend's per-conversation prompt prefixes ({@link PromptPrefixes}) in {@code /metrics}: how many conversations
 * are kept and the memory they take (against {@code affinity.prompt_prefix_bytes}), how many turns reused a prefix,
 * how many ids came from kept prefixes and how many were encoded, how many iterations of the chat template's loops
 * were taken from the last render, and the conversations dropped for room.
 */
public final class PromptPrefixMeters {
  private PromptPrefixMeters() {}

  public static void register(MeterRegistry registry, PromptPrefixes prefixes) {
    Gauge.builder("affinity.prompt.prefix.entries", prefixes, p -> p.stats().entries())
        .description("Conversations whose last prompt the frontend keeps for their next turn").register(registry);
    Gauge.builder("affinity.prompt.prefix.bytes", prefixes, p -> p.stats().bytes()).baseUnit("bytes")
        .description("Memory the kept prompts take (bounded by affinity.prompt_prefix_bytes)").register(registry);
    Gauge.builder("affinity.prompt.prefix.budget", prefixes, PromptPrefixes::budgetBytes).baseUnit("bytes")
        .description("affinity.prompt_prefix_bytes").register(registry);
    counter(registry, "affinity.prompt.prefix.turns", "result", "reused", p -> p.stats().reusedTurns(), prefixes,
        "Chat prompts encoded by reusing a kept prefix of ids (reused) or whole (whole)");
    counter(registry, "affinity.prompt.prefix.turns", "result", "whole", p -> p.stats().wholeTurns(), prefixes,
        "Chat prompts encoded by reusing a kept prefix of ids (reused) or whole (whole)");
    counter(registry, "affinity.prompt.prefix.tokens", "source", "reused", p -> p.stats().reusedTokens(), prefixes,
        "Prompt ids taken from kept prefixes (reused) or encoded (encoded)");
    counter(registry, "affinity.prompt.prefix.tokens", "source", "encoded", p -> p.stats().encodedTokens(), prefixes,
        "Prompt ids taken from kept prefixes (reused) or encoded (encoded)");
    counter(registry, "affinity.prompt.prefix.template_iterations", "source", "reused",
        p -> p.stats().reusedIterations(), prefixes,
        "Iterations of the chat template's loops taken from the conversation's last render (reused) or rendered");
    counter(registry, "affinity.prompt.prefix.template_iterations", "source", "rendered",
        p -> p.stats().renderedIterations(), prefixes,
        "Iterations of the chat template's loops taken from the conversation's last render (reused) or rendered");
    FunctionCounter.builder("affinity.prompt.prefix.evictions", prefixes, p -> p.stats().evictions())
        .description("Kept prompts dropped to stay within affinity.prompt_prefix_bytes").register(registry);
  }

  private static void counter(MeterRegistry registry, String name, String tag, String value,
      ToDoubleFunction<PromptPrefixes> f, PromptPrefixes prefixes, String description) {
    FunctionCounter.builder(name, prefixes, f).tag(tag, value).description(description).register(registry);
  }
}
