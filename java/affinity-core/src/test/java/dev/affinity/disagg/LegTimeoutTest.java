package dev.affinity.disagg;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** A leg's share of the request timeout is what {@link Duration#dividedBy(long)} gives, without its BigDecimal. */
class LegTimeoutTest {

  @Test
  void shareIsDurationDividedBy() {
    Duration[] totals = {Duration.ZERO, Duration.ofNanos(1), Duration.ofNanos(7), Duration.ofMillis(1),
        Duration.ofSeconds(600), Duration.ofSeconds(600, 123_456_789), Duration.ofSeconds(-5, 3),
        Duration.ofSeconds((1L << 32) - 1, 999_999_999), Duration.ofSeconds(1L << 40), Duration.ofDays(365 * 1000L)};
    long[] parts = {1, 2, 3, 4, 7, 11, 1000};
    for (Duration total : totals) {
      for (long n : parts) {
        assertEquals(total.dividedBy(n), LegInputs.share(total, n), total + " / " + n);
      }
    }
  }
}
