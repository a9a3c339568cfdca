package dev.affinity.bench.report;

/**
 * A rendered plot.
 *
 * @param title    its caption (also the Markdown alt text)
 * @param fileName the SVG file it is written to
 * @param svg      the SVG document
 */
record Plot(String title, String fileName, String svg) {}
