package dev.affinity.bench.report;

import java.util.List;

/**
 * A minimal SVG plot builder: a titled frame with labelled axes and grid, onto which lines, bars,
 * markers and a legend are drawn in data coordinates. The output has no XML declaration, so it can
 * be inlined into HTML as is.
 */
final class Svg {
  static final int WIDTH = 760;
  static final int HEIGHT = 400;
  private static final int LEFT = 70;
  private static final int RIGHT = 560;
  private static final int TOP = 40;
  private static final int BOTTOM = 340;
  private static final String GRID = "#e0e0e0";
  private static final String INK = "#333333";
  private static final List<String> PALETTE = List.of("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac");

  private final StringBuilder out = new StringBuilder();
  private final Axis x;
  private final Axis y;

  Svg(String title, Axis x, Axis y) {
    this.x = x;
    this.y = y;
    out.append("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"").append(WIDTH).append("\" height=\"")
        .append(HEIGHT).append("\" viewBox=\"0 0 ").append(WIDTH).append(' ').append(HEIGHT)
        .append("\" font-family=\"sans-serif\" font-size=\"12\">\n");
    out.append("<rect width=\"").append(WIDTH).append("\" height=\"").append(HEIGHT).append("\" fill=\"white\"/>\n");
    text((LEFT + RIGHT) / 2.0, 22, "middle", title, " font-size=\"15\" font-weight=\"bold\"");
    axes();
  }

  /** The colour of the series (policy) at {@code index}. */
  static String colour(int index) {
    return PALETTE.get(Math.floorMod(index, PALETTE.size()));
  }

  /** A line through the points {@code (xs[i], ys[i])}. */
  Svg polyline(double[] xs, double[] ys, String colour) {
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

  /** A legend right of the plot: one swatch and name per entry. */
  Svg legend(List<String> names, List<String> colours) {
    for (int i = 0; i < names.size(); i++) {
      double cy = TOP + 10 + i * 20;
      line(RIGHT + 16, cy, RIGHT + 40, cy, colours.get(i), " stroke-width=\"3\"");
      text(RIGHT + 46, cy + 4, "start", names.get(i), "");
    }
    return this;
  }

  /** The finished document. */
  String finish() {
    return out + "</svg>\n";
  }

  private void axes() {
    for (Axis.Tick t : x.ticks()) {
      double px = px(t.value());
      if (!x.categorical()) {
        line(px, TOP, px, BOTTOM, GRID, "");
      }
      text(px, BOTTOM + 16, "middle", t.label(), "");
    }
    for (Axis.Tick t : y.ticks()) {
      double py = py(t.value());
      line(LEFT, py, RIGHT, py, GRID, "");
      text(LEFT - 6, py + 4, "end", t.label(), "");
    }
    out.append("<rect x=\"").append(LEFT).append("\" y=\"").append(TOP).append("\" width=\"").append(RIGHT - LEFT)
        .append("\" height=\"").append(BOTTOM - TOP).append("\" fill=\"none\" stroke=\"").append(INK).append("\"/>\n");
    text((LEFT + RIGHT) / 2.0, BOTTOM + 40, "middle", x.label(), "");
    double cy = (TOP + BOTTOM) / 2.0;
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
    return LEFT + x.fraction(v) * (RIGHT - LEFT);
  }

  private double py(double v) {
    return BOTTOM - y.fraction(v) * (BOTTOM - TOP);
  }

  private static String num(double v) {
    return Text.fixed(v, 1);
  }
}
