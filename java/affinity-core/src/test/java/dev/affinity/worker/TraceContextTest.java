package dev.affinity.worker;

import dev.affinity.tracing.RequestTrace;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.conversation.HeaderSource;
import dev.affinity.routing.Fleet;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

class TraceContextTest {
  static final String VALID = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  @Test
  void aWellFormedTraceparentIsRead() {
    TraceContext c = TraceContext.from(HeaderSource.of(Map.of("Traceparent", " " + VALID + " ", "TraceState", "a=1,b=2")));
    assertEquals(VALID, c.traceparent());
    assertEquals("a=1,b=2", c.tracestate());
    assertEquals("4bf92f3577b34da6a3ce929d0e0e4736", c.traceId());
    assertEquals("00f067aa0ba902b7", c.spanId());
    assertNull(TraceContext.from(HeaderSource.of(Map.of("traceparent", VALID, "tracestate", " "))).tracestate());
  }

  @Test
  void noTraceparentNoContext() {
    assertNull(TraceContext.from(HeaderSource.NONE));
    assertNull(TraceContext.from(HeaderSource.of(Map.of("tracestate", "a=1"))), "tracestate alone means nothing");
  }

  @ParameterizedTest
  @ValueSource(strings = {
      "",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",            // no flags
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",         // upper case
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",         // zero trace id
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",         // zero span id
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",         // version ff
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",   // version 00 has nothing more
      "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01"})
  void malformedTraceparentsAreIgnored(String value) {
    assertFalse(TraceContext.isValidTraceparent(value), value);
    assertNull(TraceContext.from(HeaderSource.of(Map.of("traceparent", value))));
  }

  @Test
  void laterVersionsMayCarryMore() {
    assertTrue(TraceContext.isValidTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-ever"));
  }

  @Test
  void tracingOffHandsTheClientsContextOnAndInventsNone() {
    assertSame(RequestTrace.NONE, RequestTrace.propagating(null));
    assertNull(RequestTrace.NONE.legSent(Fleet.CONTEXT, 1, null).context());
    TraceContext c = new TraceContext(VALID, null);
    RequestTrace t = RequestTrace.propagating(c);
    assertSame(c, t.legSent(Fleet.CONTEXT, 1, null).context());
    assertSame(c, t.legSent(Fleet.GENERATION, 2, null).context());
  }
}
