package dev.affinity.conversation;

import dev.affinity.config.DisaggConfig;
import dev.affinity.config.SubagentScope;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;

/**
 * What resolution needs from the configuration: the session headers in priority order, the sub-agent
 * parent headers in priority order (the first present wins; empty = feature off), its scope, and whether ids
 * are scoped per API key ({@code affinity.tenant_isolation}).
 */
public record ConversationSettings(List<String> sessionHeaders, List<String> subagentHeaders, SubagentScope scope,
    boolean tenantIsolation) {

  public ConversationSettings {
    sessionHeaders = sessionHeaders.stream().map(h -> h.strip().toLowerCase(Locale.ROOT)).toList();
    subagentHeaders = subagentHeaders.stream().map(h -> h.strip().toLowerCase(Locale.ROOT)).filter(h -> !h.isEmpty())
        .distinct().toList();
    Objects.requireNonNull(scope, "scope");
  }

  /** One parent header (or none), as upstream's string form. */
  public ConversationSettings(List<String> sessionHeaders, Optional<String> subagentHeader, SubagentScope scope,
      boolean tenantIsolation) {
    this(sessionHeaders, Objects.requireNonNull(subagentHeader).stream().toList(), scope, tenantIsolation);
  }

  /** One parent header (or none), without tenant isolation. */
  public ConversationSettings(List<String> sessionHeaders, Optional<String> subagentHeader, SubagentScope scope) {
    this(sessionHeaders, subagentHeader, scope, false);
  }

  /** The first parent header, empty when sub-agent affinity is off. */
  public Optional<String> subagentHeader() {
    return subagentHeaders.stream().findFirst();
  }

  public static ConversationSettings from(DisaggConfig c) {
    return new ConversationSettings(c.affinity().sessionHeaders(), c.subagentHeaders(), c.subagentScope(),
        c.affinity().tenantIsolation());
  }
}
