package dev.affinity.server.metrics;

import dev.affinity.admission.KeptTurns;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.function.ToDoubleFunction;

/**
 * Each conversation's kept last turn ({@link KeptTurns}) in {@code /metrics}: how many conversations are kept and the
 * memory they take (against {@code affinity.kept_turn_bytes}), chat bodies read from the last turn's or whole and their
 * bytes, legs' ids whose JSON followed the last turn's, and the conversations dropped for room.
 */
public final class KeptTurnMeters {
  private KeptTurnMeters() {}

  public static void register(MeterRegistry registry, KeptTurns turns) {
    Gauge.builder("affinity.kept.turn.entries", turns, t -> t.stats().entries())
        .description("Conversations whose last turn (body, legs' ids) the frontend keeps for their next turn")
        .register(registry);
    Gauge.builder("affinity.kept.turn.bytes", turns, t -> t.stats().bytes()).baseUnit("bytes")
        .description("Memory the kept turns take (bounded by affinity.kept_turn_bytes)").register(registry);
    Gauge.builder("affinity.kept.turn.budget", turns, KeptTurns::budgetBytes).baseUnit("bytes")
        .description("affinity.kept_turn_bytes").register(registry);
    counter(registry, "affinity.kept.turn.bodies", "result", "reused", t -> t.stats().reusedBodies(), turns,
        "Chat bodies of a conversation read reusing its last turn's (reused) or whole (whole)");
    counter(registry, "affinity.kept.turn.bodies", "result", "whole", t -> t.stats().wholeBodies(), turns,
        "Chat bodies of a conversation read reusing its last turn's (reused) or whole (whole)");
    counter(registry, "affinity.kept.turn.body.bytes", "source", "reused", t -> t.stats().reusedBodyBytes(), turns,
        "Bytes of chat bodies taken from the last turn's messages (reused) or parsed (read)");
    counter(registry, "affinity.kept.turn.body.bytes", "source", "read", t -> t.stats().readBodyBytes(), turns,
        "Bytes of chat bodies taken from the last turn's messages (reused) or parsed (read)");
    FunctionCounter.builder("affinity.kept.turn.followed.ids", turns, t -> t.stats().followedIds())
        .description("Legs' prompt ids whose JSON was copied from the conversation's last turn's where they agree")
        .register(registry);
    FunctionCounter.builder("affinity.kept.turn.evictions", turns, t -> t.stats().evictions())
        .description("Kept turns dropped to stay within affinity.kept_turn_bytes").register(registry);
  }

  private static void counter(MeterRegistry registry, String name, String tag, String value,
      ToDoubleFunction<KeptTurns> f, KeptTurns turns, String description) {
    FunctionCounter.builder(name, turns, f).tag(tag, value).description(description).register(registry);
  }
}
