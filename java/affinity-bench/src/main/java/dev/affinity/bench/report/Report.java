package dev.affinity.bench.report;

import java.util.List;

/**
 * A report's content, ready to render in any {@link ReportFormat}.
 *
 * @param title    the heading
 * @param notes    free-text notes (command line, fleet, SLO ...), one paragraph each
 * @param sections one per workload
 * @param runs     every run's timing
 */
record Report(String title, List<String> notes, List<Section> sections, Table runs) {
  Report {
    notes = List.copyOf(notes);
    sections = List.copyOf(sections);
  }
}
