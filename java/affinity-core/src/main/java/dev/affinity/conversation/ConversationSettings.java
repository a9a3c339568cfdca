package dev.affinity.conversation;

import dev.affinity.config.DisaggConfig;
import dev.affinity.config.SubagentScope;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;

/**
 * What resolution needs from the configuration: the session headers in priority order, the
 * sub-agent parent header (empty = feature off) and its scope.
 */
public record ConversationSettings(List<String> sessionHeaders, Optional<String> subagentHeader, SubagentScope scope) {

  public ConversationSettings {
    sessionHeaders = sessionHeaders.stream().map(h -> h.strip().toLowerCase(Locale.ROOT)).toList();
    subagentHeader = Objects.requireNonNull(subagentHeader).map(h -> h.strip().toLowerCase(Locale.ROOT)).filter(h -> !h.isEmpty());
    Objects.requireNonNull(scope, "scope");
  }

  public static ConversationSettings from(DisaggConfig c) {
    return new ConversationSettings(c.affinity().sessionHeaders(), c.subagentHeader(), c.subagentScope());
  }
}
