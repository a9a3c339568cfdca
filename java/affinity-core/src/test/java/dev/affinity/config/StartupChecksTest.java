package dev.affinity.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The frontend's HTTP cluster storage without {@code internal_request_auth_key} loads (upstream's format) but is refused
 * at start-up unless {@code affinity.allow_unauthenticated_cluster_storage: true} accepts it, with a warning; etcd, a
 * key, or static URLs need no opt-in.
 */
class StartupChecksTest {
  static final String SECTIONS = "context_servers: {router: {type: round_robin}}\ngeneration_servers: {}\n";

  static LoadedConfig parse(String yaml) {
    return ConfigLoader.parse(yaml, "s.yaml");
  }

  static String http(String affinity) {
    return "hostname: localhost\ndisagg_cluster:\n  cluster_uri: http://localhost:8000\n" + SECTIONS + affinity;
  }

  @Test
  void anOpenHttpStorageLoadsButIsRefusedNamingFileKeyAndLine() {
    LoadedConfig loaded = parse(http(""));
    assertTrue(loaded.config().servesOpenClusterStorage());
    assertFalse(loaded.config().affinity().allowUnauthenticatedClusterStorage(), "off by default");
    List<ConfigProblem> refused = StartupChecks.of(loaded.config());
    assertEquals(1, refused.size(), refused.toString());
    String m = refused.get(0).format();
    assertTrue(m.startsWith("s.yaml:3:16: disagg_cluster.cluster_uri: the HTTP cluster storage (http://localhost:8000) "
        + "takes no credential without internal_request_auth_key: any process on this host could register a worker "
        + "(which then receives prompts) or delete one"), m);
    assertTrue(m.endsWith("or accept the risk with affinity.allow_unauthenticated_cluster_storage: true"), m);
    // the refusal is an error, not also a warning
    assertTrue(loaded.warnings().isEmpty(), loaded.warnings().toString());
  }

  @Test
  void anEmptyKeyIsNoKey() {
    DisaggConfig c = parse("internal_request_auth_key: ''\n" + http("")).config();
    assertEquals(1, StartupChecks.of(c).size());
  }

  @Test
  void theOptInStartsWithAWarningAtTheClusterUri() {
    LoadedConfig loaded = parse(http("affinity:\n  allow_unauthenticated_cluster_storage: true\n"));
    assertTrue(loaded.config().affinity().allowUnauthenticatedClusterStorage());
    assertEquals(List.of(), StartupChecks.of(loaded.config()));
    assertEquals(1, loaded.warnings().size(), loaded.warnings().toString());
    ConfigWarning w = loaded.warnings().get(0);
    assertEquals("disagg_cluster.cluster_uri", w.keyPath());
    assertEquals(new Location("s.yaml", 3, 16), w.location());
    assertTrue(w.message().contains("any process on this host can register a worker (which then receives prompts) or "
        + "delete one"), w.message());
  }

  @Test
  void aKeyEtcdOrStaticUrlsNeedNoOptIn() {
    List<String> safe = List.of(
        "internal_request_auth_key: k\n" + http(""),
        "disagg_cluster: {cluster_uri: 'etcd://e1:2379,etcd://e2:2379'}\n" + SECTIONS,
        "context_servers: {urls: ['c:1']}\ngeneration_servers: {urls: ['g:1']}\n");
    for (String yaml : safe) {
      LoadedConfig loaded = parse(yaml);
      assertFalse(loaded.config().servesOpenClusterStorage(), yaml);
      assertEquals(List.of(), StartupChecks.of(loaded.config()), yaml);
      assertTrue(loaded.warnings().isEmpty(), yaml + ": " + loaded.warnings());
    }
  }

  @Test
  void anOptInThatChangesNothingIsWarnedAbout() {
    String optIn = "affinity:\n  allow_unauthenticated_cluster_storage: true\n";
    List<String> needless = List.of(
        "internal_request_auth_key: k\n" + http(optIn),
        "disagg_cluster: {cluster_uri: 'etcd://e1:2379'}\n" + SECTIONS + optIn,
        "context_servers: {urls: ['c:1']}\ngeneration_servers: {urls: ['g:1']}\n" + optIn);
    for (String yaml : needless) {
      LoadedConfig loaded = parse(yaml);
      assertEquals(List.of("affinity.allow_unauthenticated_cluster_storage"),
          loaded.warnings().stream().map(ConfigWarning::keyPath).toList(), yaml);
      assertTrue(loaded.warnings().get(0).message().contains("has no effect"), loaded.warnings().toString());
    }
  }

  @Test
  void theOptInIsAStrictBooleanAndDoesNotLiftTheApiKeysError() {
    ConfigException notBool = assertThrows(ConfigException.class,
        () -> parse(http("affinity:\n  allow_unauthenticated_cluster_storage: sure\n")));
    assertEquals("affinity.allow_unauthenticated_cluster_storage", notBool.problems().get(0).keyPath());
    assertEquals(7, notBool.problems().get(0).location().line());
    // completions guarded by API keys beside an open membership: a load error, opt-in or not
    ConfigException keys = assertThrows(ConfigException.class, () -> parse(http(
        "affinity:\n  api_keys: [client]\n  allow_unauthenticated_cluster_storage: true\n")));
    assertEquals("disagg_cluster.cluster_uri", keys.problems().get(0).keyPath());
  }
}
