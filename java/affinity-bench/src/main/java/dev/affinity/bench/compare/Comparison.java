package dev.affinity.bench.compare;

import dev.affinity.bench.drive.Workload;
import dev.affinity.bench.metrics.RunResult;
import dev.affinity.bench.metrics.Slo;
import dev.affinity.bench.sim.Frontends;
import dev.affinity.bench.sim.Simulation;
import dev.affinity.config.DisaggConfig;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A matrix of simulated runs: every policy on every workload with every seed, over one fleet
 * configuration. Runs one after another on the calling thread; each is deterministic.
 *
 * @param stream    whether simulated requests stream (same numbers, slower; see the simulator)
 * @param frontends the frontend settings every policy runs under (one row per policy and setting, labelled by
 *                  {@link Frontends#label}); one frontend alone is the comparison as it always was
 */
public record Comparison(FleetConfigs fleet, List<Policy> policies, List<WorkloadSpec> workloads, List<Long> seeds, Slo slo,
    Duration sampleEvery, boolean stream, List<Frontends> frontends) {

  public Comparison {
    Objects.requireNonNull(fleet, "fleet");
    policies = List.copyOf(policies);
    workloads = List.copyOf(workloads);
    seeds = List.copyOf(seeds);
    frontends = List.copyOf(frontends);
    if (policies.isEmpty() || workloads.isEmpty() || seeds.isEmpty() || frontends.isEmpty()) {
      throw new IllegalArgumentException("a comparison needs at least one policy, one workload, one seed and one frontend setting");
    }
  }

  /** Every policy behind one frontend. */
  public Comparison(FleetConfigs fleet, List<Policy> policies, List<WorkloadSpec> workloads, List<Long> seeds, Slo slo,
      Duration sampleEvery, boolean stream) {
    this(fleet, policies, workloads, seeds, slo, sampleEvery, stream, List.of(Frontends.ONE));
  }

  public int runs() {
    return policies.size() * workloads.size() * seeds.size() * frontends.size();
  }

  /** Runs the matrix (workload, then seed, then policy, then frontend setting); {@code progress} may be null. */
  public List<RunResult> run(ProgressBar progress) throws IOException {
    workloads.forEach(WorkloadSpec::validate);  // a typo in the last workload fails before the first run
    List<DisaggConfig> configs = new ArrayList<>();
    for (Policy p : policies) {
      configs.add(fleet.under(p));  // every policy's configuration is validated before the first run
    }
    List<RunResult> results = new ArrayList<>();
    int index = 0;
    for (WorkloadSpec spec : workloads) {
      for (long seed : seeds) {
        Workload workload = spec.create(seed);
        for (int i = 0; i < policies.size(); i++) {
          for (Frontends f : frontends) {
            String name = f.label(policies.get(i).name());
            int total = workload.requests();
            if (progress != null) {
              progress.startRun(index, name + " / " + workload.name() + " / seed " + seed);
              progress.update(0, total);
            }
            Simulation sim = new Simulation(configs.get(i), slo, sampleEvery, stream, f);
            results.add(sim.run(name, workload, seed, done -> {
              if (progress != null) {
                progress.update(done, total);
              }
            }));
            index++;
          }
        }
      }
    }
    if (progress != null) {
      progress.finish();
    }
    return results;
  }
}
