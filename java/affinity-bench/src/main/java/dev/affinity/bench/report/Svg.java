package dev.affinity.bench.report;

import java.util.List;

/**
 * A minimal SVG plot builder: a titled frame with labelled axes and grid, onto which lines, bars,
 * markers and a legend are drawn in data coordinates. The output has no XML declaration, so it can
 * be inlined into HTML as is.
 *
 * <p>The plot area is always {@link #PLOT_WIDTH} x {@link #PLOT_HEIGHT}; the document grows around
 * it to fit long category labels (rotated when they would not fit side by side) and the legend,
 * whose width follows its longest name. Text widths are estimated at {@link #CHAR_PX} per
 * character, since the renderer's font metrics are unknown here.
 */
final class Svg {
  /** Estimated width of one character at the 12 px font size used for labels. */
  static final double CHAR_PX = 7;
  static final int PLOT_WIDTH = 490;
  static final int PLOT_HEIGHT = 300;
  /** The angle (degrees, counter-clockwise) of category labels too long to sit side by side. */
  static final int LABEL_ANGLE = 30;
  private static final int MIN_LEFT = 70;
  private static final int TOP = 40;
  private static final int LEGEND_GAP = 16;
  private static final int SWATCH = 24;
  private static final int MARGIN = 12;
  private static final String GRID = "#e0e0e0";
  private static final String INK = "#333333";
  private static final List<String> PALETTE = List.of("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac");

  private final StringBuilder out = new StringBuilder();
  private final Axis x;
  private final Axis y;
  private final int left;
  private final int right;
  private final int bottom;
  private final int height;
  private int width;

  Svg(String title, Axis x, Axis y) {
    this.x = x;
    this.y = y;
    boolean rotate = rotateLabels(x);
    double cos = Math.cos(Math.toRadians(LABEL_ANGLE));
    double sin = Math.sin(Math.toRadians(LABEL_ANGLE));
    // Rotated labels end at their tick and run down-left: leave room for the first ones on the left.
    double needLeft = MIN_LEFT;
    double longest = 0;
    if (rotate) {
      List<Axis.Tick> ticks = x.ticks();
      for (Axis.Tick t : ticks) {
        double w = textWidth(t.label());
        longest = Math.max(longest, w);
        needLeft = Math.max(needLeft, MARGIN + w * cos - x.fraction(t.value()) * PLOT_WIDTH);
      }
    }
    left = (int) Math.ceil(needLeft);
    right = left + PLOT_WIDTH;
    bottom = TOP + PLOT_HEIGHT;
    // Below the frame: the tick labels (rotated ones reach down by their width x sin), the axis title.
    int labels = rotate ? (int) Math.ceil(14 + longest * sin + 4) : 18;
    int axisTitleY = bottom + labels + 22;
    height = Math.max(400, axisTitleY + MARGIN);
    width = right + 20;
    text((left + right) / 2.0, 22, "middle", title, " font-size=\"15\" font-weight=\"bold\"");
    axes(rotate, axisTitleY);
  }

  /** The colour of the series (policy) at {@code index}. */
  static String colour(int index) {
    return PALETTE.get(Math.floorMod(index, PALETTE.size()));
  }

  /** The estimated width in pixels of {@code s} at the label font size. */
  static double textWidth(String s) {
    return s.codePointCount(0, s.length()) * CHAR_PX;
  }

  /** Whether the category labels of {@code x} are too wide to sit side by side under their slots. */
  static boolean rotateLabels(Axis x) {
    if (!x.categorical()) {
      return false;
    }
    double slot = PLOT_WIDTH / (x.max() - x.min());
    return x.categories().stream().anyMatch(c -> textWidth(c) > slot - 8);
  }

  /** A line through the points {@code (xs[i], ys[i])}; a dot when there is a single point. */
  Svg polyline(double[] xs, double[] ys, String colour) {
    if (xs.length == 1) {
      out.append("<circle cx=\"").append(num(px(xs[0]))).append("\" cy=\"").append(num(py(ys[0])))
          .append("\" r=\"3\" fill=\"").append(colour).append("\"/>\n");
      return this;
    }
    StringBuilder points = new StringBuilder();
    for (int i = 0; i < xs.length; i++) {
      points.append(i == 0 ? "" : " ").append(num(px(xs[i]))).append(',').append(num(py(ys[i])));
    }
    out.append("<polyline fill=\"none\" stroke=\"").append(colour).append("\" stroke-width=\"2\" points=\"")
        .append(points).append("\"/>\n");
    return this;
  }

  /** A bar from the bottom of the y axis up to {@code value}, centred on category {@code slot}, labelled. */
  Svg bar(int slot, double value, String colour, String label) {
    double x0 = px(slot - 0.3);
    double top = py(value);
    out.append("<rect x=\"").append(num(x0)).append("\" y=\"").append(num(top)).append("\" width=\"")
        .append(num(px(slot + 0.3) - x0)).append("\" height=\"").append(num(py(y.min()) - top))
        .append("\" fill=\"").append(colour).append("\"/>\n");
    text(px(slot), top - 4, "middle", label, "");
    return this;
  }

  /** A thick horizontal mark at {@code value} across category {@code slot}. */
  Svg marker(int slot, double value, String colour) {
    line(px(slot - 0.4), py(value), px(slot + 0.4), py(value), colour, " stroke-width=\"3\" stroke-dasharray=\"6,3\"");
    return this;
  }

  /** A legend right of the plot: one swatch and name per entry; the document widens to fit the longest name. */
  Svg legend(List<String> names, List<String> colours) {
    double longest = 0;
    for (int i = 0; i < names.size(); i++) {
      double cy = TOP + 10 + i * 20;
      line(right + LEGEND_GAP, cy, right + LEGEND_GAP + SWATCH, cy, colours.get(i), " stroke-width=\"3\"");
      text(right + LEGEND_GAP + SWATCH + 6, cy + 4, "start", names.get(i), "");
      longest = Math.max(longest, textWidth(names.get(i)));
    }
    width = Math.max(width, (int) Math.ceil(right + LEGEND_GAP + SWATCH + 6 + longest + MARGIN));
    return this;
  }

  /** The finished document. */
  String finish() {
    return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + width + "\" height=\"" + height
        + "\" viewBox=\"0 0 " + width + ' ' + height + "\" font-family=\"sans-serif\" font-size=\"12\">\n"
        + "<rect width=\"" + width + "\" height=\"" + height + "\" fill=\"white\"/>\n"
        + out + "</svg>\n";
  }

  private void axes(boolean rotate, int axisTitleY) {
    for (Axis.Tick t : x.ticks()) {
      double px = px(t.value());
      if (!x.categorical()) {
        line(px, TOP, px, bottom, GRID, "");
      }
      if (rotate) {
        double ty = bottom + 14;
        out.append("<text x=\"").append(num(px)).append("\" y=\"").append(num(ty))
            .append("\" text-anchor=\"end\" transform=\"rotate(-").append(LABEL_ANGLE).append(' ').append(num(px))
            .append(' ').append(num(ty)).append(")\">").append(Text.xml(t.label())).append("</text>\n");
      } else {
        text(px, bottom + 16, "middle", t.label(), "");
      }
    }
    for (Axis.Tick t : y.ticks()) {
      double py = py(t.value());
      line(left, py, right, py, GRID, "");
      text(left - 6, py + 4, "end", t.label(), "");
    }
    out.append("<rect x=\"").append(left).append("\" y=\"").append(TOP).append("\" width=\"").append(right - left)
        .append("\" height=\"").append(bottom - TOP).append("\" fill=\"none\" stroke=\"").append(INK).append("\"/>\n");
    text((left + right) / 2.0, axisTitleY, "middle", x.label(), "");
    double cy = (TOP + bottom) / 2.0;
    out.append("<text transform=\"translate(18,").append(num(cy)).append(") rotate(-90)\" text-anchor=\"middle\">")
        .append(Text.xml(y.label())).append("</text>\n");
  }

  private void line(double x1, double y1, double x2, double y2, String colour, String extra) {
    out.append("<line x1=\"").append(num(x1)).append("\" y1=\"").append(num(y1)).append("\" x2=\"").append(num(x2))
        .append("\" y2=\"").append(num(y2)).append("\" stroke=\"").append(colour).append('"').append(extra)
        .append("/>\n");
  }

  private void text(double px, double py, String anchor, String s, String extra) {
    out.append("<text x=\"").append(num(px)).append("\" y=\"").append(num(py)).append("\" text-anchor=\"")
        .append(anchor).append('"').append(extra).append('>').append(Text.xml(s)).append("</text>\n");
  }

  private double px(double v) {
    return left + x.fraction(v) * (right - left);
  }

  private double py(double v) {
    return bottom - y.fraction(v) * (bottom - TOP);
  }

  private static String num(double v) {
    return Text.fixed(v, 1);
  }
}
