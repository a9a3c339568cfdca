package dev.affinity.session;

import dev.affinity.conversation.ParentLinks;
import dev.affinity.routing.PinKeeping;
import java.util.List;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Releases what a session holds in the routing layer: the pins keyed by its id in each pin-keeping router (a
 * main agent's context and generation pins; a sub-agent's generation pin under scope {@code context}; never
 * its root's context pin, which is the root's session's) and its own parent link. Stock workers keep their KV
 * blocks until their own eviction: only the routing state is released.
 */
public final class PinAndLinkRelease implements SessionRelease {
  private static final Logger LOG = LoggerFactory.getLogger(PinAndLinkRelease.class);

  private final List<PinKeeping> routers;
  private final ParentLinks links;

  public PinAndLinkRelease(List<PinKeeping> routers, ParentLinks links) {
    this.routers = List.copyOf(routers);
    this.links = Objects.requireNonNull(links, "links");
  }

  @Override
  public void release(String sessionId) {
    int pins = 0;
    for (PinKeeping r : routers) {
      pins += r.releasePin(sessionId) ? 1 : 0;
    }
    boolean linked = links.unlink(sessionId);
    LOG.debug("session {} released: {} pins{}", sessionId, pins, linked ? " and its parent link" : "");
  }
}
