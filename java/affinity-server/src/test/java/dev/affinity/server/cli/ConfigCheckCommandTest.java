package dev.affinity.server.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class ConfigCheckCommandTest {
  @TempDir
  Path dir;

  private record Result(int code, String out, String err) {}

  private Result check(String yaml) throws Exception {
    Path f = dir.resolve("c.yaml");
    Files.writeString(f, yaml);
    return run(f.toString());
  }

  private static Result run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cmd = AffinityCli.commandLine();
    cmd.setOut(new PrintWriter(out));
    cmd.setErr(new PrintWriter(err));
    String[] line = new String[args.length + 2];
    line[0] = "config";
    line[1] = "check";
    System.arraycopy(args, 0, line, 2, args.length);
    int code = cmd.execute(line);
    return new Result(code, out.toString(), err.toString());
  }

  @Test
  void anUnknownRouterTypeFailsTheCheckAsServeWould() throws Exception {
    String yaml = """
        context_servers:
          urls: ["localhost:8001"]
          router: {type: not_a_router}
        generation_servers:
          urls: ["localhost:8002"]
        """;
    Result r = check(yaml);
    assertEquals(1, r.code(), r.out());
    assertTrue(r.err().contains("c.yaml:3:18: context_servers.router.type: unknown router type \"not_a_router\" (known: "),
        r.err());
    // serve refuses it the same way, without a stack trace
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cmd = AffinityCli.commandLine();
    cmd.setOut(new PrintWriter(out));
    cmd.setErr(new PrintWriter(err));
    int code = cmd.execute("serve", "--config", dir.resolve("c.yaml").toString(), "--port", "0");
    assertEquals(1, code);
    assertTrue(err.toString().contains("unknown router type \"not_a_router\""), err.toString());
    assertTrue(!err.toString().contains("\tat ") && !err.toString().contains("Exception"), err.toString());
  }

  /** The frontend's HTTP cluster storage without internal_request_auth_key, with {@code extra} in the affinity block. */
  private static String openStorage(String extra) {
    return """
        hostname: localhost
        port: 8000
        disagg_cluster:
          cluster_uri: http://localhost:8000
        context_servers: {router: {type: round_robin}}
        generation_servers: {}
        affinity: {model: m%s}
        """.formatted(extra);
  }

  @Test
  void anOpenHttpClusterStorageFailsTheCheckAndServe() throws Exception {
    Result r = check(openStorage(""));
    assertEquals(1, r.code(), r.out());
    assertTrue(r.err().contains("c.yaml:4:16: disagg_cluster.cluster_uri: the HTTP cluster storage (http://localhost:8000) "
        + "takes no credential without internal_request_auth_key"), r.err());
    assertTrue(r.err().contains("affinity.allow_unauthenticated_cluster_storage: true"), r.err());
    assertTrue(r.err().contains("1 error"), r.err());
    assertTrue(!r.err().contains("warning: disagg_cluster"), "an error, not also a warning: " + r.err());
    // serve refuses it the same way, before its warm-up and without a stack trace
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cmd = AffinityCli.commandLine();
    cmd.setOut(new PrintWriter(out));
    cmd.setErr(new PrintWriter(err));
    int code = cmd.execute("serve", "--config", dir.resolve("c.yaml").toString(), "--port", "0");
    assertEquals(1, code, err.toString());
    assertTrue(err.toString().contains("c.yaml:4:16: disagg_cluster.cluster_uri: the HTTP cluster storage"), err.toString());
    assertTrue(!err.toString().contains("warming up") && !err.toString().contains("\tat "), err.toString());
  }

  @Test
  void theOptInPassesTheCheckWithAWarningNamingTheRisk() throws Exception {
    Result r = check(openStorage(", allow_unauthenticated_cluster_storage: true"));
    assertEquals(0, r.code(), r.err());
    assertTrue(r.err().contains("warning: disagg_cluster.cluster_uri: the HTTP cluster storage takes no credential"), r.err());
    assertTrue(r.err().contains("any process on this host can register a worker (which then receives prompts) or delete "
        + "one"), r.err());
    assertTrue(r.out().contains("ok (1 warning)"), r.out());
  }

  @Test
  void aKeyOrEtcdNeedsNoOptIn() throws Exception {
    Result keyed = check("internal_request_auth_key: k\n" + openStorage(""));
    assertEquals(0, keyed.code(), keyed.err());
    assertTrue(keyed.out().contains(": ok") && !keyed.out().contains("warning"), keyed.out());
    Result etcd = check(openStorage("").replace("http://localhost:8000", "etcd://127.0.0.1:2379"));
    assertEquals(0, etcd.code(), etcd.err());
    assertTrue(etcd.out().contains(": ok") && !etcd.out().contains("warning"), etcd.out());
  }

  /**
   * Upstream's harness serves its HTTP cluster storage without a key: the files load as they are (UpstreamConfigsTest),
   * and the one thing the check refuses is that open storage, which an internal_request_auth_key given from outside
   * the file closes.
   */
  @Test
  void upstreamsHarnessConfigsFailOnlyForTheirOpenClusterStorage() throws Exception {
    Path key = dir.resolve("auth-key");
    Files.writeString(key, "harness-key\n");
    try (var s = Files.list(Path.of("../affinity-core/src/test/resources/upstream-configs/harness"))) {
      List<Path> files = s.filter(p -> p.toString().endsWith(".yaml")).toList();
      assertEquals(14, files.size());
      for (Path f : files) {
        Result r = run(f.toString());
        assertEquals(1, r.code(), f + ": " + r.err());
        List<String> errors = r.err().lines().filter(l -> !l.contains(": warning: ") && !l.endsWith(" error")).toList();
        assertEquals(1, errors.size(), f + ": " + r.err());
        assertTrue(errors.get(0).matches(java.util.regex.Pattern.quote(f.toString())
            + ":\\d+:\\d+: disagg_cluster\\.cluster_uri: the HTTP cluster storage .*"), errors.get(0));
        Result keyed = run("--auth-key-file", key.toString(), f.toString());
        assertEquals(0, keyed.code(), f + ": " + keyed.err());
      }
    }
  }

  @Test
  void everyShippedExampleIsOk() throws Exception {
    try (var s = Files.list(Path.of("../../docs/examples"))) {
      for (Path f : s.filter(p -> p.toString().endsWith(".yaml")).toList()) {
        Result r = run(f.toString());
        assertEquals(0, r.code(), f + ": " + r.err());
        assertTrue(r.out().contains(": ok"), r.out());
      }
    }
  }

  @Test
  void pytorchPoolsAreCheckedWithoutPythonOrTheirModel() throws Exception {
    Result r = check("""
        context_servers: {num_instances: 1}
        generation_servers: {num_instances: 1}
        affinity:
          workers:
            context: {backend: pytorch, executor: {model: /models/none, llm_args: {enable_attention_dp: true, tensor_parallel_size: 4}, num_ranks: 2}}
            generation: {backend: pytorch, executor: {model: /models/none, kv_event: {}}}
        """);
    assertEquals(1, r.code(), r.out());
    assertTrue(r.err().contains("affinity.workers.context: pytorch config: 'num_ranks': 2 disagrees with llm_args (4 attention-DP ranks"), r.err());
    assertTrue(r.err().contains("affinity.workers.generation: pytorch config: 'kv_event': unknown key"), r.err());
  }

  @Test
  void printsEveryErrorAndExitsNonZero() throws Exception {
    Result r = check("port: 0\nnode_id: 300\ncontext_servers: {urls: [\"c:1\"]}\ngeneration_servers: {urls: [\"g:1\"]}\n");
    assertEquals(1, r.code());
    assertTrue(r.err().contains("c.yaml:1:7: port: expected an integer in [1, 65535], found 0"), r.err());
    assertTrue(r.err().contains("c.yaml:2:10: node_id: expected an integer in [0, 255], found 300"), r.err());
    assertTrue(r.err().contains("2 errors"), r.err());
  }

  @Test
  void warningsAreShownButTheConfigIsOk() throws Exception {
    Result r = check("conversation_affinity_header_for_subagents: X-Parent\n"
        + "context_servers: {urls: [\"c:1\"]}\ngeneration_servers: {urls: [\"g:1\"]}\n");
    assertEquals(0, r.code(), r.err());
    assertTrue(r.err().contains("warning: context_servers.router.type: is round_robin"), r.err());
    assertTrue(r.err().contains("warning: internal_request_auth_key"), r.err());
    assertTrue(r.out().contains("ok (2 warnings)"), r.out());
  }

  @Test
  void embeddedExecutorSettingsAreCheckedByTheNativeLayer() throws Exception {
    Result r = check("""
        context_servers: {}
        generation_servers: {}
        affinity:
          workers:
            context: {executor: {block_reuse: {polcy: per_request}}}
            generation: {}
        """);
    assertEquals(1, r.code());
    assertTrue(r.err().contains("affinity.workers.context: sim config: 'block_reuse.polcy': unknown key"), r.err());
  }

  @Test
  void aMissingFileIsAnError() {
    Result r = run(dir.resolve("nope.yaml").toString());
    assertEquals(1, r.code());
    assertTrue(r.err().contains("no such file"), r.err());
  }
}
