package dev.affinity.disagg;

import dev.affinity.config.DisaggConfig;
import dev.affinity.config.ScheduleStyle;
import dev.affinity.config.SubagentScope;
import java.time.Duration;
import java.util.Objects;

/**
 * What orchestration needs from the configuration.
 *
 * @param maxLocalPrefillLength conditional disaggregation: the generation worker prefills locally when at
 *     most this many uncached tokens remain; negative = off
 * @param idsAsBase64 upstream's {@code gen_tokids_ctxbytes}: chat legs carry prompt ids as base64 int32
 *     ({@code prompt_token_ids_b64}), the context leg asks for its answer's ids in that form, and the generation leg
 *     gets them verbatim
 * @param stripGenerationHistory upstream's {@code gen_strip_message_history}: a chat generation leg that carries the
 *     prompt ids carries only the last message
 */
public record DisaggSettings(ScheduleStyle scheduleStyle, SubagentScope scope, int maxRetries, Duration requestTimeout,
    int maxLocalPrefillLength, boolean idsAsBase64, boolean stripGenerationHistory) {

  /** Settings with the prompt ids as JSON arrays and the whole history on every leg. */
  public DisaggSettings(ScheduleStyle scheduleStyle, SubagentScope scope, int maxRetries, Duration requestTimeout,
      int maxLocalPrefillLength) {
    this(scheduleStyle, scope, maxRetries, requestTimeout, maxLocalPrefillLength, false, false);
  }

  public DisaggSettings {
    Objects.requireNonNull(scheduleStyle, "scheduleStyle");
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(requestTimeout, "requestTimeout");
  }

  public static DisaggSettings from(DisaggConfig c) {
    return new DisaggSettings(c.scheduleStyle(), c.subagentScope(), c.maxRetries(),
        Duration.ofMillis((long) (c.affinity().requestTimeoutSeconds() * 1000)),
        c.conditionalDisagg().map(DisaggConfig.ConditionalDisaggConfig::maxLocalPrefillLength).orElse(-1),
        c.genTokidsCtxbytes(), c.genStripMessageHistory());
  }

  public boolean conditional() {
    return maxLocalPrefillLength >= 0;
  }
}
