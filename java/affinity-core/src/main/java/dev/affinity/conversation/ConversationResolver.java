package dev.affinity.conversation;

import java.util.Objects;
import java.util.UUID;
import java.util.function.Supplier;

/**
 * Resolves a request's own conversation id and its sub-agent affinity id (TensorRT-LLM's
 * {@code tensorrt_llm/serve/conversation_id.py}, sub-agent affinity from PR #18684):
 *
 * <ol>
 *   <li>Own id: the body's {@code conversation_params.conversation_id} wins; otherwise the first
 *       non-empty (after strip) value among the session headers, in their configured order, matched
 *       case-insensitively; otherwise none.
 *   <li>Sub-agent: with {@code conversation_affinity_header_for_subagents} set, a non-blank value of
 *       that header (of the first of its headers present) names the parent; the affinity id is the
 *       parent's root ({@link AffinityRoots}: nested sub-agents follow their recorded parent links). The own id is resolved as above regardless and never
 *       rewritten; a child with a parent header but no own id gets {@code subagent:<uuid>}. Without
 *       the parent header (a main agent) or with the feature off, resolution is exactly as step 1.
 *   <li>Every routing header present (session headers and the parent header) must be at most 256
 *       characters without control characters, else {@link InvalidHeaderException} (HTTP 400).
 * </ol>
 *
 * Thread-safe; its only state is the parent links of {@link AffinityRoots}.
 */
public final class ConversationResolver {
  public static final int MAX_HEADER_LENGTH = 256;
  public static final String SYNTHESIZED_PREFIX = "subagent:";

  private final ConversationSettings settings;
  private final Supplier<UUID> uuids;
  private final AffinityRoots roots;

  /** With parent links of its own ({@link LocalParentLinks#withDefaults()}). */
  public ConversationResolver(ConversationSettings settings) {
    this(settings, UUID::randomUUID);
  }

  /** With a UUID source for synthesized ids (tests make it deterministic). */
  public ConversationResolver(ConversationSettings settings, Supplier<UUID> uuids) {
    this(settings, uuids, new AffinityRoots(LocalParentLinks.withDefaults(), AffinityRoots.DEFAULT_MAX_DEPTH));
  }

  /** With the parent links (and depth bound) nested sub-agents are resolved by. */
  public ConversationResolver(ConversationSettings settings, Supplier<UUID> uuids, AffinityRoots roots) {
    this.settings = Objects.requireNonNull(settings, "settings");
    this.uuids = Objects.requireNonNull(uuids, "uuids");
    this.roots = Objects.requireNonNull(roots, "roots");
  }

  public AffinityRoots roots() {
    return roots;
  }

  public ConversationSettings settings() {
    return settings;
  }

  /**
   * @param bodyConversationId the body's {@code conversation_params.conversation_id}, already
   *     stripped and non-empty, or null when the body has none
   */
  public Resolution resolve(String bodyConversationId, HeaderSource headers) {
    Objects.requireNonNull(headers, "headers");
    checkAll(settings.sessionHeaders(), headers);
    checkAll(settings.subagentHeaders(), headers);
    String own = bodyConversationId != null ? bodyConversationId
        : stripped(firstPresent(settings.sessionHeaders(), headers));
    String affinity = stripped(firstPresent(settings.subagentHeaders(), headers));
    boolean synthesized = false;
    if (affinity != null && own == null) {
      own = SYNTHESIZED_PREFIX + uuids.get();
      synthesized = true;
    }
    Resolution r = own == null && affinity == null ? Resolution.NONE : new Resolution(own, affinity, synthesized);
    // scoped first: parent links are recorded and followed in the tenant's namespace only
    return roots.rooted(settings.tenantIsolation() ? r.scopedTo(tenantOf(headers)) : r);
  }

  /**
   * The conversation id a request's session headers name, as {@link #resolve} takes it when the body names none: the
   * first non-blank one, stripped, in the tenant's namespace under tenant isolation. Null without one, or when that
   * header's value is one {@code resolve} refuses. What a conversation's state outside resolution is kept under
   * ({@code dev.affinity.admission.KeptTurns}), so that a session's end, which names the resolved id, reaches it.
   */
  public static String sessionKey(ConversationSettings settings, HeaderSource headers) {
    return keyIn(settings.sessionHeaders(), settings, headers);
  }

  /**
   * The parent session a sub-agent's request names in its sub-agent header ({@link ConversationSettings#subagentHeaders},
   * the first non-blank one, stripped, in the tenant's namespace under tenant isolation): the key its parent's state is
   * kept under ({@link #sessionKey} of the parent's own requests). Null without one, or when the value is one
   * {@link #resolve} refuses.
   */
  public static String parentSessionKey(ConversationSettings settings, HeaderSource headers) {
    return keyIn(settings.subagentHeaders(), settings, headers);
  }

  /**
   * The first non-blank value of {@code names}, stripped, in the tenant's namespace under tenant isolation; null
   * without one, or when it is one {@link #resolve} refuses.
   */
  private static String keyIn(java.util.List<String> names, ConversationSettings settings, HeaderSource headers) {
    String value = firstPresent(names, headers);
    if (value == null || problemWith(value) != null) {
      return null;
    }
    return settings.tenantIsolation() ? Resolution.inTenant(tenantOf(headers), value.strip()) : value.strip();
  }

  /** The first of {@code names}' values that is present and not blank, as sent; null when none is. */
  private static String firstPresent(java.util.List<String> names, HeaderSource headers) {
    for (String name : names) {
      String value = headers.first(name);
      if (value != null && !value.isBlank()) {
        return value;
      }
    }
    return null;
  }

  private static String stripped(String value) {
    return value == null ? null : value.strip();
  }

  /** Checks every one of {@code names} that is present ({@link #checked}). */
  private static void checkAll(java.util.List<String> names, HeaderSource headers) {
    for (String name : names) {
      checked(name, headers.first(name));
    }
  }

  /** The tenant of a request under tenant isolation ({@link PresentedKey#tenant()}). */
  public static String tenantOf(HeaderSource headers) {
    return PresentedKey.of(headers).tenant();
  }

  /** Rejects a routing header value that is too long or carries control characters. */
  static String checked(String name, String value) {
    if (value == null) {
      return null;
    }
    String problem = problemWith(value);
    if (problem != null) {
      throw new InvalidHeaderException(name, "header " + name + " " + problem);
    }
    return value;
  }

  /**
   * What is wrong with a conversation id (a routing header's value or the body's
   * {@code conversation_params.conversation_id}): too long, or a control character; null when nothing.
   */
  public static String problemWith(String value) {
    if (value.length() > MAX_HEADER_LENGTH) {
      return "is " + value.length() + " characters long; at most " + MAX_HEADER_LENGTH + " are allowed";
    }
    for (int i = 0; i < value.length(); i++) {
      char ch = value.charAt(i);
      if (ch < 0x20 || ch == 0x7f) {
        return "contains a control character (0x" + Integer.toHexString(ch) + ") at position " + i;
      }
    }
    int bad = dev.affinity.protocol.Utf8.firstInvalidInHeader(value);
    if (bad >= 0) {
      return "is not valid UTF-8 at byte " + bad + " (overlong forms, surrogates and code points above U+10FFFF are "
          + "invalid)";
    }
    return null;
  }
}
