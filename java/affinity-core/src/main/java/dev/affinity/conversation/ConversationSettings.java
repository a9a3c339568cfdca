package dev.affinity.conversation;

import dev.affinity.config.DisaggConfig;
import dev.affinity.config.SubagentScope;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;

/**
 * What resolution needs from the configuration: the session headers in priority order, the
 * sub-agent parent header (empty = feature off), its scope, and whether ids are scoped per API key
 * ({@code affinity.tenant_isolation}).
 */
public record ConversationSettings(List<String> sessionHeaders, Optional<String> subagentHeader, SubagentScope scope,
    boolean tenantIsolation) {

  public ConversationSettings {
    sessionHeaders = sessionHeaders.stream().map(h -> h.strip().toLowerCase(Locale.ROOT)).toList();
    subagentHeader = Objects.requireNonNull(subagentHeader).map(h -> h.strip().toLowerCase(Locale.ROOT)).filter(h -> !h.isEmpty());
    Objects.requireNonNull(scope, "scope");
  }

  /** Without tenant isolation. */
  public ConversationSettings(List<String> sessionHeaders, Optional<String> subagentHeader, SubagentScope scope) {
    this(sessionHeaders, subagentHeader, scope, false);
  }

  public static ConversationSettings from(DisaggConfig c) {
    return new ConversationSettings(c.affinity().sessionHeaders(), c.subagentHeader(), c.subagentScope(),
        c.affinity().tenantIsolation());
  }
}
