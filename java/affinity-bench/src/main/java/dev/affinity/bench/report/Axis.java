package dev.affinity.bench.report;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;

/**
 * A plot axis: linear, base-10 logarithmic, or categorical (one slot per name, at 0, 1, ...).
 *
 * @param label      the axis title
 * @param min        the lowest value shown
 * @param max        the highest value shown
 * @param log        whether the scale is logarithmic
 * @param categories the slot names of a categorical axis, else empty
 */
record Axis(String label, double min, double max, boolean log, List<String> categories) {
  /** A tick mark: its value and label. */
  record Tick(double value, String label) {}

  Axis {
    categories = List.copyOf(categories);
    if (!(max > min) || (log && !(min > 0))) {
      throw new IllegalArgumentException("bad axis range " + min + " .. " + max);
    }
  }

  static Axis linear(String label, double min, double max) {
    return new Axis(label, min, max > min ? max : min + 1, false, List.of());
  }

  /** A log axis from the power of ten at or below {@code lo} to the one at or above {@code hi}. */
  static Axis log(String label, double lo, double hi) {
    double min = Math.pow(10, Math.floor(Math.log10(lo)));
    double max = Math.pow(10, Math.ceil(Math.log10(Math.max(lo, hi))));
    return new Axis(label, min, max > min ? max : min * 10, true, List.of());
  }

  static Axis categories(String label, List<String> names) {
    return new Axis(label, -0.5, Math.max(1, names.size()) - 0.5, false, names);
  }

  boolean categorical() {
    return !categories.isEmpty();
  }

  /** Where {@code v} lies between min (0) and max (1), clamped to that range. */
  double fraction(double v) {
    double f = log
        ? (Math.log10(Math.max(v, min)) - Math.log10(min)) / (Math.log10(max) - Math.log10(min))
        : (v - min) / (max - min);
    return Math.max(0, Math.min(1, f));
  }

  List<Tick> ticks() {
    List<Tick> ticks = new ArrayList<>();
    if (categorical()) {
      for (int i = 0; i < categories.size(); i++) {
        ticks.add(new Tick(i, categories.get(i)));
      }
    } else if (log) {
      for (long e = Math.round(Math.log10(min)); e <= Math.round(Math.log10(max)); e++) {
        double v = Math.pow(10, e);
        ticks.add(new Tick(v, BigDecimal.valueOf(v).stripTrailingZeros().toPlainString()));
      }
    } else {
      double step = niceStep((max - min) / 5);
      int decimals = (int) Math.max(0, -Math.floor(Math.log10(step)));
      for (long k = (long) Math.ceil(min / step - 1e-9); k * step <= max + step * 1e-9; k++) {
        ticks.add(new Tick(k * step, Text.fixed(k * step, decimals)));
      }
    }
    return ticks;
  }

  /** 1, 2 or 5 times a power of ten, near {@code raw}. */
  private static double niceStep(double raw) {
    double power = Math.pow(10, Math.floor(Math.log10(raw)));
    double f = raw / power;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * power;
  }
}
