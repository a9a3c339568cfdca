package dev.affinity.bench.report;

import java.util.List;

/**
 * The part of a report about one workload.
 *
 * @param workload the workload's name
 * @param summary  one row per policy
 * @param plots    its plots, in display order
 */
record Section(String workload, Table summary, List<Plot> plots) {
  Section {
    plots = List.copyOf(plots);
  }
}
