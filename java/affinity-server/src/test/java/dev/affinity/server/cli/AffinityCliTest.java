package dev.affinity.server.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class AffinityCliTest {

  private static CliRun run(String... args) {
    return CliRun.of(args);
  }

  @Test
  void helpListsTheSubcommands() {
    CliRun r = run("--help");
    assertEquals(0, r.code());
    assertTrue(r.out().contains("native-info"), r.out());
    assertTrue(r.out().contains("sim"), r.out());
  }

  @Test
  void everySubcommandHasHelp() {
    for (String sub : new String[] {"native-info", "sim", "worker"}) {
      CliRun r = run(sub, "--help");
      assertEquals(0, r.code(), sub);
      assertTrue(r.out().contains("Usage: affinity " + sub), r.out());
    }
  }

  @Test
  void versionReportsThePomsVersionAndTheNativeLibrary() {
    CliRun r = run("--version");
    assertEquals(0, r.code());
    String pom = System.getProperty("affinity.test.pom.version");
    assertTrue(pom != null && !pom.isBlank(), "surefire passes the pom's version");
    assertTrue(r.out().startsWith("affinity " + pom + System.lineSeparator()), "the pom's version: " + r.out());
    assertEquals(pom, dev.affinity.server.AffinityVersion.current());
    assertTrue(r.out().contains("affinity-native"), r.out());
  }

  @Test
  void nativeInfoResolvesTheDefaultConfig() {
    CliRun r = run("native-info");
    assertEquals(0, r.code(), r.err());
    assertTrue(r.out().contains("backends: sim"), r.out());
    assertTrue(r.out().contains("\"preset\":\"llama3-70b-h100-tp8\""), r.out());
  }

  @Test
  void nativeInfoReportsABadConfigKey() {
    CliRun r = run("native-info", "--config", "{\"num_rank\": 2}");
    assertEquals(1, r.code());
    assertTrue(r.err().contains("'num_rank': unknown key"), r.err());
  }

  @Test
  void simRunsASmallWorkloadAndReportsReuse() {
    CliRun r = run("sim", "--requests", "40", "--prompt-tokens", "512", "--shared-prefix-tokens", "384",
        "--prefix-groups", "2", "--max-new-tokens", "8", "--config", "{\"num_ranks\": 2, \"tokens_per_block\": 32}");
    assertEquals(0, r.code(), r.err());
    assertTrue(r.out().contains("requests           40 (0 errors)"), r.out());
    double hit = Double.parseDouble(r.out().replaceAll("(?s).*prefix hit ratio\\s+([0-9.]+).*", "$1"));
    assertTrue(hit > 0.5, "shared prefixes are reused: " + hit);
  }

  @Test
  void simRejectsBadArguments() {
    CliRun r = run("sim", "--requests", "0");
    assertEquals(2, r.code());
    assertTrue(r.err().contains("must be > 0"), r.err());
  }

  @Test
  void workerRefusesBadConfigurationsBeforeListening() {
    CliRun bad = run("worker", "--port", "0", "--executor-json", "{\"num_rank\": 2}");
    assertEquals(1, bad.code());
    assertTrue(bad.err().contains("num_rank"), bad.err());

    CliRun notAnObject = run("worker", "--port", "0", "--executor-json", "[1]");
    assertEquals(1, notAnObject.code());
    assertTrue(notAnObject.err().contains("JSON object"), notAnObject.err());

    CliRun virtual = run("worker", "--port", "0", "--executor-json", "{\"clock\": {\"mode\": \"virtual\"}}");
    assertEquals(1, virtual.code());
    assertTrue(virtual.err().contains("real clock"), virtual.err());

    CliRun loops = run("worker", "--port", "0", "--io-threads", "-1");
    assertEquals(1, loops.code());
    assertTrue(loops.err().contains("--io-threads must not be negative: -1"), loops.err());

    CliRun notNats = run("worker", "--port", "0", "--nats", "http://127.0.0.1:4222");
    assertEquals(1, notNats.code());
    assertTrue(notNats.err().contains("--nats http://127.0.0.1:4222: expected nats://HOST:PORT"), notNats.err());
    CliRun tokenAlone = run("worker", "--port", "0", "--nats-token-file", "token");
    assertEquals(1, tokenAlone.code());
    assertTrue(tokenAlone.err().contains("need --nats"), tokenAlone.err());
    CliRun noToken = run("worker", "--port", "0", "--nats", "nats://127.0.0.1:4222", "--nats-token-file",
        "/nonexistent/token");
    assertEquals(1, noToken.code());
    assertTrue(noToken.err().contains("--nats-token-file /nonexistent/token: no such file"), noToken.err());

    CliRun unreachable = run("worker", "--port", "0", "--nats", "nats://127.0.0.1:1");
    assertEquals(1, unreachable.code());
    assertTrue(unreachable.err().contains("--nats: cannot connect to nats://127.0.0.1:1 (none)"), unreachable.err());

    CliRun both = run("worker", "--port", "0", "--config", "x.json", "--executor-json", "{}");
    assertEquals(2, both.code(), "--config and --executor-json exclude each other");
    assertEquals(2, run("worker").code(), "--port is required");
  }
}
