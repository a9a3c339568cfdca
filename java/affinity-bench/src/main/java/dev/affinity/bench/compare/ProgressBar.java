package dev.affinity.bench.compare;

import java.io.PrintStream;
import java.util.Locale;

/**
 * A one-line progress bar for a matrix of runs: the run being done, its requests answered so far and
 * the whole matrix's share, redrawn in place at most a few times a second. Thread-safe (a live run
 * reports from its request threads).
 */
public final class ProgressBar {
  private static final int WIDTH = 30;
  private static final long REDRAW_NANOS = 200_000_000L;

  private final PrintStream out;
  private final int runs;
  private long lastDraw;
  private int run;
  private String label = "";

  public ProgressBar(PrintStream out, int runs) {
    this.out = out;
    this.runs = runs;
  }

  /** Starts run {@code index} (from 0). */
  public synchronized void startRun(int index, String label) {
    this.run = index;
    this.label = label;
    lastDraw = 0;
  }

  /** {@code done} of {@code total} requests of the current run have been answered. */
  public synchronized void update(int done, int total) {
    long now = System.nanoTime();
    if (done < total && now - lastDraw < REDRAW_NANOS) {
      return;
    }
    lastDraw = now;
    double share = (run + (total == 0 ? 1.0 : (double) done / total)) / runs;
    int filled = (int) Math.round(share * WIDTH);
    out.printf(Locale.ROOT, "\r[%s%s] %3.0f%%  run %d/%d %s  %d/%d requests ", "=".repeat(filled), " ".repeat(WIDTH - filled),
        share * 100, run + 1, runs, label, done, total);
    out.flush();
  }

  /** Ends the bar's line. */
  public synchronized void finish() {
    out.println();
    out.flush();
  }
}
