package dev.affinity.conversation;

import java.util.HashSet;
import java.util.Objects;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Nested sub-agents: a sub-agent's affinity id is its <em>root</em>, the first ancestor without a known
 * parent. Each resolved sub-agent request with an own id records {@code own -> parent} in {@link ParentLinks};
 * the root is found by following the links from the parent, at most {@code maxDepth} of them (a deeper
 * chain stops at the ancestor reached there). A link that would close a cycle (the parent's chain already
 * leads back to the child) is not recorded, and a cycle met while following (links written concurrently
 * by several frontends) is broken: the chain stops at the last ancestor before the repeat. Both are logged.
 * Thread-safe when the links are.
 */
public final class AffinityRoots {
  private static final Logger LOG = LoggerFactory.getLogger(AffinityRoots.class);
  public static final int DEFAULT_MAX_DEPTH = 16;

  private final ParentLinks links;
  private final int maxDepth;

  public AffinityRoots(ParentLinks links, int maxDepth) {
    if (maxDepth < 0) {
      throw new IllegalArgumentException("maxDepth must be >= 0, got " + maxDepth);
    }
    this.links = Objects.requireNonNull(links, "links");
    this.maxDepth = maxDepth;
  }

  public ParentLinks links() {
    return links;
  }

  /**
   * The resolution with its affinity id replaced by the root's, after recording the request's own link. A
   * main agent (no affinity id) is returned unchanged and records nothing.
   */
  public Resolution rooted(Resolution r) {
    if (!r.isSubagent()) {
      return r;
    }
    String own = r.synthesized() ? null : r.conversationId();
    String parent = r.affinityId();
    if (parent.equals(own)) {
      LOG.warn("sub-agent {} names itself as its parent; it is its own affinity root", own);
      return r;
    }
    Set<String> seen = new HashSet<>();
    if (own != null) {
      seen.add(own);
    }
    seen.add(parent);
    String root = parent;
    for (int depth = 0; depth < maxDepth; depth++) {
      String next = links.parentOf(root);
      if (next == null) {
        break;
      }
      if (!seen.add(next)) {
        if (next.equals(own)) {
          LOG.warn("sub-agent {} with parent {} would close a cycle of parent links; the link is not recorded and "
              + "its affinity root is {}", own, parent, root);
          return withRoot(r, root);
        }
        LOG.warn("parent links of {} form a cycle at {}; its affinity root is {}", parent, next, root);
        break;
      }
      root = next;
      if (depth == maxDepth - 1 && links.parentOf(root) != null) {
        LOG.debug("parent links of {} are deeper than {}; its affinity root is {}", parent, maxDepth, root);
      }
    }
    if (own != null) {
      links.link(own, parent);
    }
    return withRoot(r, root);
  }

  private static Resolution withRoot(Resolution r, String root) {
    return root.equals(r.affinityId()) ? r
        : new Resolution(r.conversationId(), root, r.synthesized(), r.tenant());
  }
}
