package dev.affinity.session;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * The live sessions (conversation ids, tenant-scoped where ids are) and when each was last active. A session
 * ends when its client says so ({@link #end}) or expires once idle for {@code idleTtlNanos}
 * ({@link #expireIdle}, called periodically); either way its {@link SessionRelease} runs once. At most
 * {@code maxSessions} are tracked: beyond, the least recently active expires first. Time comes from an injected
 * clock (nanoseconds). Thread-safe; releases run outside the lock.
 */
public final class SessionRegistry {
  public static final int DEFAULT_MAX_SESSIONS = 1_000_000;

  private final long idleTtlNanos;
  private final int maxSessions;
  private final LongSupplier clock;
  private final SessionRelease release;
  /** Session id to the time it was last active, least recently active first. */
  private final LinkedHashMap<String, Long> lastActive = new LinkedHashMap<>(16, 0.75f, true);
  private long expirations;
  private long ended;

  public SessionRegistry(long idleTtlNanos, int maxSessions, LongSupplier clock, SessionRelease release) {
    if (idleTtlNanos < 1 || maxSessions < 1) {
      throw new IllegalArgumentException("idleTtlNanos and maxSessions must be positive, got " + idleTtlNanos + ", "
          + maxSessions);
    }
    this.idleTtlNanos = idleTtlNanos;
    this.maxSessions = maxSessions;
    this.clock = Objects.requireNonNull(clock, "clock");
    this.release = Objects.requireNonNull(release, "release");
  }

  /** A request of {@code sessionId} arrived: it is live and active now. */
  public void touch(String sessionId) {
    Objects.requireNonNull(sessionId, "sessionId");
    List<String> evicted = new ArrayList<>(0);
    synchronized (this) {
      lastActive.put(sessionId, clock.getAsLong());
      Iterator<String> it = lastActive.keySet().iterator();
      while (lastActive.size() > maxSessions && it.hasNext()) {
        evicted.add(it.next());
        it.remove();
        expirations++;
      }
    }
    evicted.forEach(release::release);
  }

  /**
   * The client ended {@code sessionId}: it is forgotten and released now (also when this frontend had not
   * seen it: another frontend may have, and its shared pins and links are released all the same).
   */
  public void end(String sessionId) {
    synchronized (this) {
      lastActive.remove(sessionId);
      ended++;
    }
    release.release(sessionId);
  }

  /** Expires every session idle for the TTL or longer; returns how many. */
  public int expireIdle() {
    List<String> idle = new ArrayList<>();
    synchronized (this) {
      long now = clock.getAsLong();
      Iterator<Map.Entry<String, Long>> it = lastActive.entrySet().iterator();
      while (it.hasNext()) {
        Map.Entry<String, Long> e = it.next();
        if (now - e.getValue() < idleTtlNanos) {
          break; // least recently active first: the rest are younger
        }
        idle.add(e.getKey());
        it.remove();
      }
      expirations += idle.size();
    }
    idle.forEach(release::release);
    return idle.size();
  }

  /** Sessions live now. */
  public synchronized int live() {
    return lastActive.size();
  }

  /** Sessions expired since start (idle, or evicted beyond the bound). */
  public synchronized long expirations() {
    return expirations;
  }

  /** Sessions their clients ended since start. */
  public synchronized long ended() {
    return ended;
  }
}
