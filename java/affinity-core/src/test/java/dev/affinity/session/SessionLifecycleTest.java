package dev.affinity.session;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.affinity.conversation.HeaderSource;
import dev.affinity.conversation.LocalParentLinks;
import dev.affinity.conversation.Resolution;
import dev.affinity.frontend.AdmittedRequest;
import dev.affinity.frontend.ClientSink;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.protocol.CompletionRequest;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.Prompt;
import dev.affinity.routing.PinKeeping;
import dev.affinity.routing.Candidate;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Sessions ended by the client or expired when idle, and what that releases. */
class SessionLifecycleTest {
  final AtomicLong now = new AtomicLong(0);
  final List<String> released = new ArrayList<>();

  /** A pin-keeping router reduced to its pins. */
  static final class Pins implements PinKeeping {
    final Set<String> keys = new HashSet<>();

    @Override
    public void adoptPin(String key, Candidate candidate) {
      keys.add(key);
    }

    @Override
    public boolean releasePin(String key) {
      return keys.remove(key);
    }

    @Override
    public int pinCount() {
      return keys.size();
    }
  }

  SessionRegistry registry(long ttl, int max) {
    return new SessionRegistry(ttl, max, now::get, released::add);
  }

  @Test
  void idleSessionsExpireAfterTheTtlOnTheInjectedClock() {
    SessionRegistry s = registry(100, 10);
    s.touch("a");
    now.set(50);
    s.touch("b");
    now.set(99);
    assertEquals(0, s.expireIdle());
    now.set(100);
    assertEquals(1, s.expireIdle());
    assertEquals(List.of("a"), released);
    s.touch("b"); // active again at 100
    now.set(149);
    assertEquals(0, s.expireIdle(), "b was active 49 ns ago");
    now.set(200);
    assertEquals(1, s.expireIdle());
    assertEquals(List.of("a", "b"), released);
    assertEquals(0, s.live());
    assertEquals(2, s.expirations());
  }

  @Test
  void beyondTheBoundTheLeastRecentlyActiveExpires() {
    SessionRegistry s = registry(1_000, 2);
    s.touch("a");
    s.touch("b");
    s.touch("a");
    s.touch("c");
    assertEquals(List.of("b"), released);
    assertEquals(2, s.live());
    assertEquals(1, s.expirations());
  }

  @Test
  void endingASessionReleasesItsPinsAndItsLinkButNotItsRootsPin() {
    Pins context = new Pins();
    Pins generation = new Pins();
    LocalParentLinks links = new LocalParentLinks(10, 1_000, now::get);
    context.adoptPin("root", null);
    generation.adoptPin("root", null);
    generation.adoptPin("child", null); // scope context: the child's generation pin is its own
    links.link("child", "root");
    SessionRegistry s = new SessionRegistry(1_000, 10, now::get,
        new PinAndLinkRelease(List.of(context, generation), links));
    s.touch("child");
    s.end("child");
    assertEquals(Set.of("root"), context.keys);
    assertEquals(Set.of("root"), generation.keys);
    assertNull(links.parentOf("child"));
    assertEquals(0, s.live());
    assertEquals(1, s.ended());
    assertEquals(0, s.expirations());
    s.end("root");
    assertEquals(Set.of(), context.keys);
    assertEquals(Set.of(), generation.keys);
  }

  static AdmittedRequest request(String conversation, Map<String, String> headers) {
    CompletionRequest body = CompletionRequest.builder("m", Prompt.text("hi")).build();
    Resolution r = conversation == null ? Resolution.NONE : new Resolution(conversation, null, false);
    return new AdmittedRequest(body, HeaderSource.of(headers), r, null);
  }

  /** Answers each request when told to. */
  static final class Deferred {
    final List<ClientSink> sinks = new ArrayList<>();
  }

  @Test
  void theFinalHeaderEndsTheSessionOnceItsAnswerIsDelivered() {
    SessionRegistry s = registry(1_000, 10);
    Deferred d = new Deferred();
    SessionLifecycleHandler h = new SessionLifecycleHandler((req, sink) -> d.sinks.add(sink), s, "x-dynamo-session-final");
    h.handle(request("conv", Map.of()), Recording.INSTANCE);
    h.handle(request("conv", Map.of("X-Dynamo-Session-Final", " TRUE ")), Recording.INSTANCE);
    assertEquals(1, s.live());
    assertEquals(List.of(), released, "not before the last turn is answered: it still routes to the pins");
    d.sinks.get(1).streamStart(RouteInfo.of(0));
    assertEquals(List.of(), released);
    d.sinks.get(1).streamEnd(RouteInfo.of(0));
    d.sinks.get(1).abort("late", RouteInfo.of(0));
    assertEquals(List.of("conv"), released, "once");
    assertEquals(0, s.live());

    h.handle(request("other", Map.of("x-dynamo-session-final", "false")), Recording.INSTANCE);
    d.sinks.get(2).respondEncoded(null, RouteInfo.of(0));
    h.handle(request("failing", Map.of("x-dynamo-session-final", "true")), Recording.INSTANCE);
    d.sinks.get(3).fail(503, ErrorResponse.of(503, "no worker", null), RouteInfo.of(0));
    assertEquals(List.of("conv", "failing"), released);
    assertEquals(1, s.live(), "other is live");

    h.handle(request(null, Map.of("x-dynamo-session-final", "true")), Recording.INSTANCE);
    assertEquals(Recording.INSTANCE, d.sinks.get(4), "a request without an id passes through");
  }

  /** A sink that takes everything. */
  enum Recording implements ClientSink {
    INSTANCE;

    @Override
    public void respondEncoded(dev.affinity.worker.EncodedResponse encodedResponse, RouteInfo route) {}

    @Override
    public void streamStart(RouteInfo route) {}

    @Override
    public void streamEncoded(dev.affinity.worker.EncodedChunk encodedChunk) {}

    @Override
    public void streamEnd(RouteInfo route) {}

    @Override
    public void fail(int status, ErrorResponse error, RouteInfo route) {}

    @Override
    public void abort(String reason, RouteInfo route) {}

    @Override
    public void onDisconnect(Runnable callback) {}
  }
}
