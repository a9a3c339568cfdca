package dev.affinity.bench.report;

import java.util.List;

/**
 * A table of already formatted cells (unescaped).
 *
 * @param header      column names
 * @param rows        rows, each as long as the header
 * @param textColumns how many leading columns hold text (left-aligned); the rest are numbers
 */
record Table(List<String> header, List<List<String>> rows, int textColumns) {
  Table {
    header = List.copyOf(header);
    rows = rows.stream().map(List::copyOf).toList();
    for (List<String> row : rows) {
      if (row.size() != header.size()) {
        throw new IllegalArgumentException("row has " + row.size() + " cells, header " + header.size());
      }
    }
  }
}
