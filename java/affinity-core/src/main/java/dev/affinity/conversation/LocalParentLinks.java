package dev.affinity.conversation;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * The parent links of one frontend: at most {@code maxLinks} (the least recently written is dropped first),
 * each forgotten {@code ttlNanos} after it was last written. Time comes from an injected clock (nanoseconds),
 * so tests need no waiting. Thread-safe.
 */
public final class LocalParentLinks implements ParentLinks {
  public static final int DEFAULT_MAX_LINKS = 100_000;
  public static final long DEFAULT_TTL_SECONDS = 3600;

  private record Link(String parent, long writtenNanos) {}

  private final int maxLinks;
  private final long ttlNanos;
  private final LongSupplier clock;
  /** In write order: a rewritten link moves to the end. */
  private final LinkedHashMap<String, Link> links = new LinkedHashMap<>();

  public LocalParentLinks(int maxLinks, long ttlNanos, LongSupplier clock) {
    if (maxLinks < 1 || ttlNanos < 1) {
      throw new IllegalArgumentException("maxLinks and ttlNanos must be positive, got " + maxLinks + ", " + ttlNanos);
    }
    this.maxLinks = maxLinks;
    this.ttlNanos = ttlNanos;
    this.clock = Objects.requireNonNull(clock, "clock");
  }

  /** {@value #DEFAULT_MAX_LINKS} links of {@value #DEFAULT_TTL_SECONDS} s on the wall clock. */
  public static LocalParentLinks withDefaults() {
    return new LocalParentLinks(DEFAULT_MAX_LINKS, DEFAULT_TTL_SECONDS * 1_000_000_000L, System::nanoTime);
  }

  @Override
  public synchronized String parentOf(String child) {
    Link l = links.get(child);
    if (l == null) {
      return null;
    }
    if (clock.getAsLong() - l.writtenNanos() >= ttlNanos) {
      links.remove(child);
      return null;
    }
    return l.parent();
  }

  @Override
  public synchronized void link(String child, String parent) {
    Objects.requireNonNull(child, "child");
    Objects.requireNonNull(parent, "parent");
    long now = clock.getAsLong();
    links.remove(child);
    links.put(child, new Link(parent, now));
    Iterator<Map.Entry<String, Link>> it = links.entrySet().iterator();
    while (it.hasNext()) {
      Map.Entry<String, Link> eldest = it.next();
      if (links.size() > maxLinks || now - eldest.getValue().writtenNanos() >= ttlNanos) {
        it.remove();
      } else {
        break; // write order: the rest are younger
      }
    }
  }

  @Override
  public synchronized boolean unlink(String child) {
    return links.remove(child) != null;
  }

  @Override
  public synchronized int size() {
    return links.size();
  }
}
