package dev.affinity.bench.sim;

import dev.affinity.worker.TokenCodec;
import java.util.Arrays;

/**
 * The simulator's codec: token ids written as decimal numbers separated by spaces, and read back.
 * Simulated prompts and outputs are synthetic ids with no text behind them, so the fleet simulator's
 * workers render them this way instead of running a BPE decoder over every generated token (which
 * dominated a replay's Java time). Exact in both directions.
 */
public final class IdTokenCodec implements TokenCodec {
  @Override
  public int[] encode(String text) {
    String t = text.strip();
    if (t.isEmpty()) {
      return new int[0];
    }
    try {
      return Arrays.stream(t.split("\\s+")).mapToInt(Integer::parseInt).toArray();
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("the simulator's prompts are token ids separated by spaces, got: "
          + (t.length() > 40 ? t.substring(0, 40) + "..." : t));
    }
  }

  @Override
  public String decode(int[] tokens) {
    StringBuilder sb = new StringBuilder(tokens.length * 6);
    for (int i = 0; i < tokens.length; i++) {
      if (i > 0) {
        sb.append(' ');
      }
      sb.append(tokens[i]);
    }
    return sb.toString();
  }

  @Override
  public String name() {
    return "ids";
  }
}
