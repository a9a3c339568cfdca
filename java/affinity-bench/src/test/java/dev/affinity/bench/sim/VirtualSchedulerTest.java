package dev.affinity.bench.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class VirtualSchedulerTest {
  @Test
  void runsTasksInTimeThenSubmissionOrderAndMovesTheClock() {
    VirtualScheduler s = new VirtualScheduler();
    List<String> ran = new ArrayList<>();
    s.schedule(() -> ran.add("b@2ms:" + s.nowMicros()), Duration.ofMillis(2));
    s.schedule(() -> ran.add("a@1ms:" + s.nowMicros()), Duration.ofMillis(1));
    s.schedule(() -> ran.add("c@2ms:" + s.nowMicros()), Duration.ofMillis(2));
    s.schedule(() -> {
      ran.add("d@0:" + s.nowMicros());
      s.schedule(() -> ran.add("e@+500us:" + s.nowMicros()), Duration.ofNanos(500_000));
    }, Duration.ZERO);
    while (s.runNext()) {
      // drain
    }
    assertEquals(List.of("d@0:0", "e@+500us:500", "a@1ms:1000", "b@2ms:2000", "c@2ms:2000"), ran);
    assertEquals(2000, s.nowMicros());
  }

  @Test
  void cancelledTasksNeverRunAndAreNotPending() {
    VirtualScheduler s = new VirtualScheduler();
    List<String> ran = new ArrayList<>();
    Runnable cancel = s.schedule(() -> ran.add("x"), Duration.ofSeconds(1));
    s.schedule(() -> ran.add("y"), Duration.ofSeconds(2));
    assertEquals(2, s.pending());
    cancel.run();
    cancel.run();  // idempotent
    assertEquals(1, s.pending());
    assertEquals(2_000_000, s.nextTaskMicros());
    while (s.runNext()) {
      // drain
    }
    assertEquals(List.of("y"), ran);
    assertEquals(0, s.pending());
    assertEquals(-1, s.nextTaskMicros());
    assertFalse(s.runNext());
  }

  @Test
  void timeNeverGoesBack() {
    VirtualScheduler s = new VirtualScheduler();
    s.advanceTo(10);
    assertThrows(IllegalArgumentException.class, () -> s.advanceTo(9));
    s.at(5, () -> { });  // a time in the past runs now
    assertEquals(10, s.nextTaskMicros());
  }
}
