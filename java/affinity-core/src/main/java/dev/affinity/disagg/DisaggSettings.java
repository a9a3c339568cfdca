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
 */
public record DisaggSettings(ScheduleStyle scheduleStyle, SubagentScope scope, int maxRetries, Duration requestTimeout,
    int maxLocalPrefillLength) {

  public DisaggSettings {
    Objects.requireNonNull(scheduleStyle, "scheduleStyle");
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(requestTimeout, "requestTimeout");
  }

  public static DisaggSettings from(DisaggConfig c) {
    return new DisaggSettings(c.scheduleStyle(), c.subagentScope(), c.maxRetries(),
        Duration.ofMillis((long) (c.affinity().requestTimeoutSeconds() * 1000)),
        c.conditionalDisagg().map(DisaggConfig.ConditionalDisaggConfig::maxLocalPrefillLength).orElse(-1));
  }

  public boolean conditional() {
    return maxLocalPrefillLength >= 0;
  }
}
