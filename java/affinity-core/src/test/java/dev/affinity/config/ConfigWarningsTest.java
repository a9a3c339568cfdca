package dev.affinity.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Each warning fires exactly when it should. */
class ConfigWarningsTest {

  private static List<ConfigWarning> warnings(String yaml) {
    return ConfigLoader.parse(yaml, "w.yaml").warnings();
  }

  private static List<String> paths(String yaml) {
    return warnings(yaml).stream().map(ConfigWarning::keyPath).toList();
  }

  private static String cfg(String top, String ctxType, String ctxExtra, String genType, String genExtra) {
    return top + "\ncontext_servers:\n  urls: [\"c0:1\"]\n" + ctxExtra + "  router: {type: " + ctxType + "}\n"
        + "generation_servers:\n  urls: [\"g0:1\"]\n" + genExtra + "  router: {type: " + genType + "}\n";
  }

  static final String HEADER = "conversation_affinity_header_for_subagents: X-Parent\ninternal_request_auth_key: k";
  static final String ADP_CONV = "  enable_attention_dp: true\n  attention_dp_config: {kv_cache_routing_conversation_affinity: true}\n";
  static final String ADP_PLAIN = "  enable_attention_dp: true\n";

  @Test
  void noWarningsForAConsistentConfig() {
    assertEquals(List.of(), paths(cfg(HEADER, "conversation", ADP_CONV, "load_balancing", "")));
    assertEquals(List.of(), paths(cfg("", "round_robin", "", "round_robin", "")), "feature off: nothing to warn");
  }

  @Test
  void subagentHeaderWithAContextRouterThatCannotKeepAffinity() {
    List<ConfigWarning> w = warnings(cfg(HEADER, "round_robin", "", "load_balancing", ""));
    assertEquals(List.of("context_servers.router.type"), w.stream().map(ConfigWarning::keyPath).toList());
    assertTrue(w.get(0).format().contains("w.yaml:5:18: warning: context_servers.router.type: is round_robin"), w.get(0).format());
    assertTrue(w.get(0).fix().contains("conversation"));
    assertEquals(List.of("context_servers.router.type", "affinity.tokenizer"),
        paths(cfg(HEADER, "kv_cache_aware", "", "round_robin", "")));
    assertEquals(List.of("affinity.tokenizer"), paths(cfg(HEADER, "affinity", "", "round_robin", "")));
  }

  @Test
  void aKvEventRouterBeforeRemoteWorkersWithoutAModelTokenizerIsWarnedAboutOnce() {
    List<ConfigWarning> w = warnings(cfg("", "kv_cache_aware", "", "dynamo_kv", ""));
    assertEquals(List.of("affinity.tokenizer"), w.stream().map(ConfigWarning::keyPath).toList());
    assertTrue(w.get(0).message().contains("context_servers.router.type is kv_cache_aware"), w.get(0).message());
    assertTrue(w.get(0).fix().contains("tokenizer directory"), w.get(0).fix());
    assertEquals(List.of(), paths(cfg("", "conversation", "", "sglang_cache_aware", "")),
        "routers with their own index match text against text");
    String withDir = cfg("", "kv_cache_aware", "", "round_robin", "")
        .replace("router: {type: kv_cache_aware}", "router: {type: kv_cache_aware, tokenizer_dir: /models/q}");
    assertEquals(List.of(), paths(withDir), "a router's tokenizer_dir is the frontend's tokenizer");
  }

  @Test
  void tenantIsolationWithRemoteWorkersIsNoWarning() {
    // the configuration cannot tell a stock worker (no salt on completions) from an Affinity worker; each worker's
    // join says so (RemoteWorkers.warnIfUnsalted), so the Kubernetes recipe of Affinity workers starts clean
    assertEquals(List.of(), paths(cfg("affinity: {api_keys: [key-a, key-b], tenant_isolation: true}", "round_robin", "",
        "round_robin", "")));
  }

  @Test
  void scopeBothAlsoNeedsAGenerationRouterThatKeepsAffinity() {
    String both = HEADER + "\nsubagent_affinity_scope: both";
    assertEquals(List.of("generation_servers.router.type"), paths(cfg(both, "conversation", "", "load_balancing", "")));
    assertEquals(List.of(), paths(cfg(both, "conversation", "", "conversation", "")));
  }

  @Test
  void rankAffinityInactiveWithoutConversationAwareAdp() {
    assertEquals(List.of("context_servers.attention_dp_config"), paths(cfg(HEADER, "conversation", ADP_PLAIN, "round_robin", "")));
    // without the header, a conversation router still wants rank affinity
    assertEquals(List.of("context_servers.attention_dp_config"), paths(cfg("", "conversation", ADP_PLAIN, "round_robin", "")));
    // no attention DP: nothing to route ranks of
    assertEquals(List.of(), paths(cfg(HEADER, "conversation", "", "round_robin", "")));
  }

  @Test
  void scopeBothWithoutConversationAwareRanksOnGeneration() {
    String both = HEADER + "\nsubagent_affinity_scope: both";
    assertEquals(List.of("generation_servers.attention_dp_config"),
        paths(cfg(both, "conversation", "", "conversation", ADP_PLAIN)));
    assertEquals(List.of(), paths(cfg(both, "conversation", "", "conversation", ADP_CONV)));
  }

  @Test
  void subagentHeaderWithTrtllmWorkersButNoAuthKey() {
    List<ConfigWarning> w = warnings(cfg("conversation_affinity_header_for_subagents: X-Parent", "conversation", "", "round_robin", ""));
    assertEquals(List.of("internal_request_auth_key"), w.stream().map(ConfigWarning::keyPath).toList());
    assertTrue(w.get(0).message().contains("never sent unsigned"));
    // embedded workers get the id in process: no key needed
    assertEquals(List.of(), paths("""
        conversation_affinity_header_for_subagents: X-Parent
        context_servers: {router: {type: conversation}}
        generation_servers: {}
        affinity: {workers: {context: {}, generation: {}}}
        """));
  }

  @Test
  void scopeBothWithoutTheHeaderHasNoEffect() {
    assertEquals(List.of("subagent_affinity_scope"), paths(cfg("subagent_affinity_scope: both", "round_robin", "", "round_robin", "")));
  }
}
