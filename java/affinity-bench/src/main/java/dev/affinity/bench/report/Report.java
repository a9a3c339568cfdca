package dev.affinity.bench.report;

import java.util.List;

/**
 * A report's content, ready to render in any {@link ReportFormat}.
 *
 * @param title    the heading
 * @param notes    free-text notes (command line, fleet, SLO ...), one paragraph each
 * @param sections one per workload
 * @param sweeps   load sweeps (agents sustained within the SLO), possibly none
 * @param runs     every run's timing
 */
record Report(String title, List<String> notes, List<Section> sections, List<Sweeps.Sweep> sweeps, Table runs) {
  Report {
    notes = List.copyOf(notes);
    sections = List.copyOf(sections);
    sweeps = List.copyOf(sweeps);
  }
}
