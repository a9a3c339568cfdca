package dev.affinity.config;

import java.util.List;
import java.util.stream.Collectors;

/** Every error found in one configuration file (loading reports them all, not just the first). */
public class ConfigException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final transient List<ConfigProblem> problems;

  public ConfigException(List<ConfigProblem> problems) {
    super(problems.stream().map(ConfigProblem::format).collect(Collectors.joining("\n")));
    this.problems = List.copyOf(problems);
  }

  public List<ConfigProblem> problems() {
    return problems;
  }
}
