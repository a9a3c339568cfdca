package dev.affinity.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.routing.RouterFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * TensorRT-LLM's own disaggregated test configs (test resources upstream-configs/, PROVENANCE.md): those with
 * static urls load as they are and build their routers; the templates without urls get the one error that
 * names the three ways to give workers; the server configs upstream's harness writes from every template
 * (harness/: a disagg_cluster, {@code conditional_disagg_config: null}, {@code router: {}}) all load, and only their
 * open HTTP cluster storage keeps the frontend from starting with them ({@link StartupChecks}).
 */
class UpstreamConfigsTest {
  static final Path DIR = Path.of("src/test/resources/upstream-configs");
  /** Templates that name neither urls nor disagg_cluster: upstream's harness adds the cluster. */
  static final Set<String> TEMPLATES = Set.of("disagg_config.yaml", "disagg_config_conversation.yaml",
      "disagg_config_conversation_workers.yaml", "disagg_config_gen_only.yaml", "disagg_config_gen_only_kv_cache_aware.yaml",
      "disagg_config_ctxtp1_gentp1_deepseek_v3_lite_one_mtp_attention_dp_overlap.yaml", "disagg_config_ctxpp2_genpp2.yaml",
      "disagg_config_ctxtp2_gentp2_gptoss_eagle_trtllm.yaml");

  private static List<Path> yamls(Path dir) throws Exception {
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.toString().endsWith(".yaml")).sorted().toList();
    }
  }

  @Test
  void theSampleIsWhatProvenanceLists() throws Exception {
    String provenance = Files.readString(DIR.resolve("PROVENANCE.md"));
    List<Path> files = yamls(DIR);
    assertEquals(14, files.size());
    for (Path f : files) {
      assertTrue(provenance.contains("`" + f.getFileName() + "`"), f + " has no provenance line");
    }
    assertTrue(Files.readString(DIR.resolve("LICENSE")).contains("Apache License"));
    assertEquals(files.stream().map(Path::getFileName).toList(),
        yamls(DIR.resolve("harness")).stream().map(Path::getFileName).toList(), "one harness config per template");
  }

  @Test
  void configsWithUrlsLoadAndBuildTheirRouters() throws Exception {
    int loaded = 0;
    for (Path f : yamls(DIR)) {
      if (TEMPLATES.contains(f.getFileName().toString())) {
        continue;
      }
      DisaggConfig c = ConfigLoader.load(f).config();
      assertEquals(List.of(), new RouterFactory().check(c), f.toString());
      assertTrue(c.affinity().model().isEmpty(), "no affinity block: no model check");
      loaded++;
    }
    assertEquals(6, loaded);
  }

  @Test
  void templatesWithoutWorkersGetOneErrorNamingTheThreeWays() throws Exception {
    for (String name : TEMPLATES) {
      ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.load(DIR.resolve(name)), name);
      assertEquals(1, e.problems().size(), name + ": " + e.getMessage());
      String m = e.problems().get(0).format();
      assertTrue(m.contains(DIR.resolve(name) + ":"), m);
      assertTrue(m.contains("urls") && m.contains("disagg_cluster") && m.contains("affinity.workers"), m);
    }
  }

  @Test
  void theServerConfigsOfUpstreamsHarnessLoad() throws Exception {
    for (Path f : yamls(DIR.resolve("harness"))) {
      LoadedConfig loaded = ConfigLoader.load(f);
      DisaggConfig c = loaded.config();
      assertEquals(List.of(), new RouterFactory().check(c), f.toString());
      DisaggConfig.DisaggClusterConfig cluster = c.disaggCluster().orElseThrow();
      assertEquals("test_cluster", cluster.clusterName());
      assertEquals("/trtllm-disagg/test_cluster/workers", cluster.workerKeyPrefix());
      assertTrue(cluster.isHttp());
      assertEquals(1, cluster.heartbeatIntervalSec());
      assertEquals(2, cluster.inactiveTimeoutSec());
      // a KV-event router without a tokenizer directory is warned about (upstream's router would load the model's)
      boolean kvRouter = TokenizerSource.KV_EVENT_ROUTERS.contains(c.context().router().type())
          || TokenizerSource.KV_EVENT_ROUTERS.contains(c.generation().router().type());
      assertEquals(kvRouter ? List.of("affinity.tokenizer") : List.of(),
          loaded.warnings().stream().map(ConfigWarning::keyPath).toList(), f.toString());
      // they load unchanged, but serve them as they are and the frontend's HTTP storage would take no credential (no
      // internal_request_auth_key): the frontend refuses that at start-up (and config check), not the loader
      List<ConfigProblem> refused = StartupChecks.of(c);
      assertEquals(1, refused.size(), f.toString());
      assertEquals("disagg_cluster.cluster_uri", refused.get(0).keyPath());
      assertEquals(f.toString(), refused.get(0).location().file());
      assertTrue(refused.get(0).location().line() > 0, refused.get(0).format());
    }
    DisaggConfig conditional = ConfigLoader.load(DIR.resolve("harness/disagg_config_conditional.yaml")).config();
    assertEquals(100, conditional.conditionalDisagg().orElseThrow().maxLocalPrefillLength());
    DisaggConfig genOnly = ConfigLoader.load(DIR.resolve("harness/disagg_config_gen_only.yaml")).config();
    assertEquals(0, genOnly.disaggCluster().orElseThrow().minimalContextInstances());
    assertTrue(genOnly.conditionalDisagg().isEmpty(), "conditional_disagg_config: null is absent");
  }
}
