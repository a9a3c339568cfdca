package dev.affinity.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.routing.RouterFactory;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** What a TensorRT-LLM user's config needs: null and {} as absent, the notes and the strictness switches. */
class UpstreamCompatibilityTest {
  static final String SECTIONS = """
      context_servers:
        urls: ["c0:8001"]
      generation_servers:
        urls: ["g0:8002"]
      """;

  private static LoadedConfig parse(String yaml) {
    return ConfigLoader.parse(yaml, "u.yaml");
  }

  private static ConfigException fails(String yaml) {
    return assertThrows(ConfigException.class, () -> parse(yaml));
  }

  @ParameterizedTest
  @ValueSource(strings = {"null", "{}", "~"})
  void optionalSectionsAcceptNullAndEmptyAsAbsent(String v) {
    DisaggConfig c = parse(SECTIONS + "conditional_disagg_config: " + v + "\notlp_config: " + v + "\ndisagg_cluster: " + v
        + "\naffinity: " + v + "\n").config();
    assertTrue(c.conditionalDisagg().isEmpty(), "no second error about the generation router either");
    assertTrue(c.otlpTracesEndpoint().isEmpty());
    assertTrue(c.disaggCluster().isEmpty());
    assertEquals(AffinitySettings.defaults(), c.affinity());
  }

  @Test
  void nullScalarsKeepTheirDefaults() {
    DisaggConfig c = parse(SECTIONS + """
        node_id: null
        hostname: null
        port: null
        max_retries: null
        schedule_style: null
        num_workers: null
        disagg_coordinator_url: null
        perf_metrics_max_requests: null
        """).config();
    assertEquals("localhost", c.hostname());
    assertEquals(8000, c.port());
    assertEquals(1, c.maxRetries());
    assertEquals(1, c.numWorkers());
    assertTrue(c.disaggCoordinatorUrl().isEmpty());
    assertEquals(ConfigLoader.defaultNodeId(), c.nodeId());
  }

  @Test
  void nullInsideSectionsAndClusterKeepsTheDefault() {
    DisaggConfig c = parse("""
        disagg_cluster:
          cluster_uri: http://localhost:8000
          cluster_name: null
          minimal_instances: {context_servers: null, generation_servers: 2}
          heartbeat_interval_sec: null
        context_servers:
          num_instances: null
          urls: null
          router: null
        generation_servers:
          router: {}
        affinity:
          model: null
          debug_headers: null
        """).config();
    DisaggConfig.DisaggClusterConfig cluster = c.disaggCluster().orElseThrow();
    assertEquals("", cluster.clusterName());
    assertEquals("/trtllm-disagg//workers", cluster.workerKeyPrefix(), "upstream's two slashes");
    assertEquals(1, cluster.minimalContextInstances());
    assertEquals(2, cluster.minimalGenerationInstances());
    assertEquals(5, cluster.heartbeatIntervalSec());
    assertEquals("round_robin", c.context().router().type());
    assertEquals(1, c.context().numInstances());
    assertTrue(c.affinity().model().isEmpty());
  }

  @Test
  void anExplicitNullNeverCausesASecondError() {
    ConfigException e = fails("""
        conditional_disagg_config: null
        context_servers:
          urls: ["c0:8001"]
        generation_servers:
          urls: "g0:8002"
        """);
    assertEquals(1, e.problems().size(), e.getMessage());
    assertEquals("generation_servers.urls", e.problems().get(0).keyPath());
  }

  @Test
  void noWorkersAtAllIsOneErrorNamingTheThreeWays() {
    ConfigException e = fails("""
        hostname: localhost
        context_servers:
          num_instances: 2
          router: {type: conversation}
        generation_servers:
          num_instances: 1
        """);
    assertEquals(1, e.problems().size(), e.getMessage());
    ConfigProblem p = e.problems().get(0);
    assertEquals(2, p.location().line());
    assertEquals("context_servers", p.keyPath());
    assertTrue(p.message().contains("context_servers and generation_servers have no workers"), p.message());
    assertTrue(p.message().contains("urls") && p.message().contains("disagg_cluster")
        && p.message().contains("affinity.workers.context"), p.message());
    // a count mismatch keeps its own message
    ConfigException mismatch = fails("""
        context_servers:
          num_instances: 2
          urls: ["c0:8001"]
        generation_servers:
          urls: ["g0:8002"]
        """);
    assertTrue(mismatch.getMessage().contains("has 1 entries but num_instances is 2"), mismatch.getMessage());
  }

  @Test
  void numWorkersIsANoteAndTheCoordinatorAWarning() {
    LoadedConfig c = parse(SECTIONS + "num_workers: 4\ndisagg_coordinator_url: http://coord:7999\n");
    assertEquals(4, c.config().numWorkers());
    assertEquals(List.of("num_workers", "disagg_coordinator_url"), c.warnings().stream().map(ConfigWarning::keyPath).toList());
    assertTrue(c.warnings().get(0).format().contains("u.yaml:5:14"), c.warnings().get(0).format());
    assertTrue(c.warnings().get(0).message().contains("every core"));
    assertTrue(c.warnings().get(1).message().contains("etcd"));
    assertEquals(List.of(), parse(SECTIONS + "num_workers: 1\n").warnings());
  }

  @Test
  void requireInternalAuthMakesAMissingKeyAnError() {
    String base = """
        conversation_affinity_header_for_subagents: X-Dynamo-Parent-Session-ID
        context_servers:
          urls: ["c0:8001"]
          router: {type: conversation}
        generation_servers:
          urls: ["g0:8002"]
        """;
    // default: a warning
    assertTrue(parse(base).warnings().stream().anyMatch(w -> w.keyPath().equals("internal_request_auth_key")));
    ConfigException e = fails(base + "affinity:\n  require_internal_auth: true\n");
    assertEquals(1, e.problems().size(), e.getMessage());
    assertEquals("affinity.require_internal_auth", e.problems().get(0).keyPath());
    assertEquals(8, e.problems().get(0).location().line());
    assertTrue(e.getMessage().contains("internal_request_auth_key"));
    DisaggConfig ok = parse(base + "internal_request_auth_key: k\naffinity:\n  require_internal_auth: true\n").config();
    assertTrue(ok.affinity().requireInternalAuth());
  }

  @Test
  void aParentHeaderThatIsASessionHeaderIsWarnedAbout() {
    LoadedConfig c = parse("""
        conversation_affinity_header_for_subagents: X-Session-ID
        internal_request_auth_key: k
        context_servers:
          urls: ["c0:8001"]
          router: {type: conversation}
        generation_servers:
          urls: ["g0:8002"]
        """);
    assertEquals(List.of("conversation_affinity_header_for_subagents"), c.warnings().stream().map(ConfigWarning::keyPath).toList());
    assertTrue(c.warnings().get(0).fix().contains("X-Dynamo-Parent-Session-ID"));
  }

  @Test
  void theHttpClusterStorageIsLoopbackOnly() {
    String sections = "context_servers: {router: {type: round_robin}}\ngeneration_servers: {}\n";
    assertTrue(parse("disagg_cluster: {cluster_uri: http://127.0.0.1:8000}\n" + sections).config().disaggCluster()
        .orElseThrow().isHttp());
    ConfigException remote = fails("disagg_cluster: {cluster_uri: http://frontend:8000}\n" + sections);
    assertEquals("disagg_cluster.cluster_uri", remote.problems().get(0).keyPath());
    assertTrue(remote.getMessage().contains("loopback") && remote.getMessage().contains("etcd://"), remote.getMessage());
    ConfigException bindAll = fails("hostname: 0.0.0.0\ndisagg_cluster: {cluster_uri: http://localhost:8000}\n" + sections);
    assertTrue(bindAll.getMessage().contains("0.0.0.0"), bindAll.getMessage());
    DisaggConfig etcd = parse("hostname: 0.0.0.0\ndisagg_cluster: {cluster_uri: 'etcd://e1:2379,etcd://e2:2379'}\n" + sections)
        .config();
    assertEquals(List.of("e1:2379", "e2:2379"), etcd.disaggCluster().orElseThrow().etcdEndpoints());
    ConfigException scheme = fails("disagg_cluster: {cluster_uri: 'zk://h:1'}\n" + sections);
    assertEquals(1, scheme.problems().size(), scheme.getMessage());
    assertTrue(scheme.getMessage().startsWith("u.yaml:1:31: disagg_cluster.cluster_uri"), scheme.getMessage());
  }

  @Test
  void configCheckBuildsTheRouters() {
    DisaggConfig c = parse("""
        context_servers:
          urls: ["c0:8001"]
          router: {type: not_a_router}
        generation_servers:
          urls: ["g0:8002"]
          router: {type: conversation, max_sessions: -1}
        """).config();
    List<ConfigProblem> problems = new RouterFactory().check(c);
    assertEquals(2, problems.size(), problems.toString());
    assertEquals("context_servers.router.type", problems.get(0).keyPath());
    assertTrue(problems.get(0).format().startsWith("u.yaml:3:18"), problems.get(0).format());
    assertTrue(problems.get(0).message().contains("known: affinity, conversation, ")
        && problems.get(0).message().contains("kv_cache_aware, llmd_scorer, load_balancing, round_robin"),
        problems.get(0).message());
    assertTrue(problems.get(1).keyPath().startsWith("generation_servers.router.max_sessions"), problems.get(1).toString());
  }
}
