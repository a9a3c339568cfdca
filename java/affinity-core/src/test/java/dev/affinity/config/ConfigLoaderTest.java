package dev.affinity.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class ConfigLoaderTest {
  static final Path EXAMPLES = Path.of("../../docs/examples");

  static final String MINIMAL = """
      context_servers:
        urls: ["c0:8001"]
      generation_servers:
        urls: ["g0:8002"]
      """;

  private static LoadedConfig parse(String yaml) {
    return ConfigLoader.parse(yaml, "test.yaml");
  }

  private static ConfigException fails(String yaml) {
    return assertThrows(ConfigException.class, () -> parse(yaml));
  }

  @Test
  void affinityTokenizerIsAnEncodingModelOrATokenizerDirectoryTakenFromTheConfigFilesFolder(
      @org.junit.jupiter.api.io.TempDir Path tmp) throws Exception {
    assertEquals("o200k_base", parse("affinity:\n  tokenizer: o200k_base\n" + MINIMAL).config().affinity().tokenizer());
    assertTrue(parse("affinity:\n  tokenizer: o200k_base\n" + MINIMAL).config().affinity().tokenizerDirectory().isEmpty());
    Path model = Files.createDirectories(tmp.resolve("models/qwen"));
    Files.writeString(model.resolve("tokenizer.json"), "{}");
    Path file = tmp.resolve("disagg.yaml");
    Files.writeString(file, "affinity:\n  tokenizer: models/qwen\n" + MINIMAL);
    AffinitySettings a = ConfigLoader.load(file).config().affinity();
    assertEquals(model.toAbsolutePath().normalize().toString(), a.tokenizer(), "relative to the config file's folder");
    assertEquals(model.toAbsolutePath().normalize(), a.tokenizerDirectory().orElseThrow());
    assertEquals(List.of(), ConfigLoader.load(file).warnings());
    Files.writeString(file, "affinity:\n  tokenizer: models/none\n" + MINIMAL);
    ConfigException missing = assertThrows(ConfigException.class, () -> ConfigLoader.load(file));
    assertTrue(missing.getMessage().contains("disagg.yaml:2:14: affinity.tokenizer: is neither a BPE encoding"),
        missing.getMessage());
    assertTrue(missing.getMessage().contains("does not exist"), missing.getMessage());
    Files.createDirectories(tmp.resolve("models/empty"));
    Files.writeString(file, "affinity:\n  tokenizer: models/empty\n" + MINIMAL);
    ConfigException empty = assertThrows(ConfigException.class, () -> ConfigLoader.load(file));
    assertTrue(empty.getMessage().contains("has no tokenizer.json"), empty.getMessage());
  }

  @Test
  void theFrontendsTokenizerComesFromAffinityOrFromUpstreamsRouterArguments() {
    assertTrue(TokenizerSource.of(parse(MINIMAL).config()).isEmpty());
    TokenizerSource fromRouter = TokenizerSource.of(parse(MINIMAL.replace("urls: [\"c0:8001\"]",
        "urls: [\"c0:8001\"]\n  router: {type: kv_cache_aware, tokenizer_dir: /models/q, model_path: /models/p}"))
        .config()).orElseThrow();
    assertEquals(Path.of("/models/q"), fromRouter.directory(), "tokenizer_dir before model_path");
    assertTrue(fromRouter.origin().startsWith("context_servers.router.tokenizer_dir (test.yaml:3"), fromRouter.origin());
    TokenizerSource fromGen = TokenizerSource.of(parse(MINIMAL.replace("urls: [\"g0:8002\"]",
        "urls: [\"g0:8002\"]\n  router: {type: kv_cache_aware, model_path: /models/p}")).config()).orElseThrow();
    assertEquals(Path.of("/models/p"), fromGen.directory());
  }

  @Test
  void secretsGivenFromOutsideTheYamlReplaceItsKeysBeforeValidationAndMustNotBeSetTwice() {
    ConfigSecrets given = new ConfigSecrets(Optional.of(new ConfigSecrets.Given<>("k3y", "--auth-key-file /s/k")),
        Optional.of(new ConfigSecrets.Given<>(List.of("a", "b"), "--api-keys-file /s/a")));
    String guarded = "affinity:\n  require_internal_auth: true\n  tenant_isolation: true\n" + MINIMAL;
    ConfigException alone = fails(guarded);
    assertTrue(alone.getMessage().contains("affinity.require_internal_auth"), alone.getMessage());
    assertTrue(alone.getMessage().contains("affinity.tenant_isolation"), alone.getMessage());
    DisaggConfig c = ConfigLoader.parse(guarded, "test.yaml", given).config();
    assertEquals(Optional.of("k3y"), c.internalRequestAuthKey());
    assertEquals(List.of("a", "b"), c.affinity().apiKeys());
    assertTrue(c.affinity().tenantIsolation());
    assertEquals(List.of("a", "b"), ConfigLoader.parse(MINIMAL, "test.yaml", given).config().affinity().apiKeys(),
        "without an affinity block too");

    ConfigException twice = assertThrows(ConfigException.class, () -> ConfigLoader.parse(
        "internal_request_auth_key: clear\naffinity:\n  api_keys: [clear]\n" + MINIMAL, "test.yaml", given));
    assertEquals(2, twice.problems().size(), twice.getMessage());
    assertEquals("test.yaml:1:1: internal_request_auth_key: is also given by --auth-key-file /s/k: keep the key in one "
        + "place (remove it from the YAML)", twice.problems().get(0).format());
    assertEquals("test.yaml:3:3: affinity.api_keys: is also given by --api-keys-file /s/a: keep the keys in one place "
        + "(remove api_keys from the YAML)", twice.problems().get(1).format());
    assertFalse(twice.getMessage().contains("k3y"), "no message carries a secret");
    assertEquals(List.of("a", "b"), ConfigLoader.parse("affinity:\n  api_keys: null\n" + MINIMAL, "test.yaml", given)
        .config().affinity().apiKeys(), "an explicit null is absent, as everywhere");
    assertThrows(IllegalArgumentException.class, () -> new ConfigSecrets(Optional.empty(),
        Optional.of(new ConfigSecrets.Given<>(List.of(), "x"))));
  }

  @Test
  void everyExampleConfigLoadsWithoutWarnings() throws Exception {
    List<Path> files;
    try (Stream<Path> s = Files.list(EXAMPLES)) {
      files = s.filter(p -> p.toString().endsWith(".yaml")).sorted().toList();
    }
    assertEquals(10, files.size(), files.toString());
    for (Path f : files) {
      LoadedConfig c = ConfigLoader.load(f);
      // examples of remote workers name no tokenizer directory (there is none here): that warning alone may stand
      assertEquals(List.of(), c.warnings().stream().filter(w -> !w.keyPath().equals("affinity.tokenizer")).toList(),
          f.toString());
    }
  }

  @Test
  void examplesCarryWhatTheyShow() throws Exception {
    DisaggConfig sim = ConfigLoader.load(EXAMPLES.resolve("sim-workers.yaml")).config();
    assertTrue(sim.context().isEmbedded());
    assertEquals(2, sim.context().numInstances());
    assertEquals(2, sim.context().embedded().orElseThrow().ranks());
    assertEquals("conversation", sim.context().embedded().orElseThrow().adpRouterType());
    assertEquals("x-dynamo-parent-session-id".toLowerCase(), sim.subagentHeader().orElseThrow().toLowerCase());
    assertTrue(sim.affinity().debugHeaders());

    DisaggConfig trt = ConfigLoader.load(EXAMPLES.resolve("trtllm-serve-workers.yaml")).config();
    assertEquals("pytorch", trt.context().workerArgs().get("backend"), "top-level keys are inherited");
    assertEquals("pytorch", trt.generation().workerArgs().get("backend"));
    assertEquals(17, trt.nodeId());
    assertEquals(256L, trt.generation().router().args().get("max_batch_size"), "adopted into router args");

    DisaggConfig cond = ConfigLoader.load(EXAMPLES.resolve("conditional-disagg.yaml")).config();
    assertEquals(2048, cond.conditionalDisagg().orElseThrow().maxLocalPrefillLength());
    assertEquals(32L, cond.generation().router().args().get("tokens_per_block"));

    DisaggConfig gpu = ConfigLoader.load(EXAMPLES.resolve("gpu-inprocess.yaml")).config();
    assertEquals("pytorch", gpu.context().embedded().orElseThrow().backend());
    assertEquals("pytorch", gpu.generation().embedded().orElseThrow().backend());
    assertEquals(Map.of("CUDA_VISIBLE_DEVICES", "0,1,2,3"), gpu.context().embedded().orElseThrow().executorConfig().get("env"));

    DisaggConfig sub = ConfigLoader.load(EXAMPLES.resolve("subagent-affinity.yaml")).config();
    assertEquals("x-dynamo-session-id", sub.affinity().sessionHeaders().get(6));

    DisaggConfig cc = ConfigLoader.load(EXAMPLES.resolve("bench-claude-code.yaml")).config();
    assertEquals(8, cc.context().embedded().orElseThrow().instances());
    assertEquals(4, cc.generation().embedded().orElseThrow().instances());
    for (WorkerPool pool : List.of(cc.context().embedded().orElseThrow(), cc.generation().embedded().orElseThrow())) {
      long blocks = ((Number) pool.executorConfig().get("kv_blocks_per_rank")).longValue();
      assertTrue(blocks * 32 > 755_680, "one rank holds the largest Claude Code call (755,680 tokens) in 32-token blocks");
    }
    assertEquals(3600, cc.affinity().requestTimeoutSeconds(), "a whole 755k prompt prefills for minutes");
    assertEquals(3600, cc.affinity().selectionTtlSeconds());
  }

  @Test
  void tokenizerModelNeedsWorkersThatRunAModel() {
    ConfigException e = fails("""
        context_servers: {num_instances: 1}
        generation_servers: {num_instances: 1}
        affinity:
          tokenizer: model
          workers:
            context: {instances: 1}
            generation: {instances: 1, backend: pytorch, executor: {model: m}}
        """);
    assertTrue(e.getMessage().contains("test.yaml:4:14: affinity.tokenizer: \"model\" takes the tokenizer of a model the "
        + "workers run, but the sim backend runs none"), e.getMessage());
  }

  @Test
  void promptBoundsAreReadWhereGiven() {
    DisaggConfig c = parse("""
        context_servers: {num_instances: 1}
        generation_servers: {num_instances: 1}
        affinity:
          max_prompt_tokens: 131072
          workers:
            context: {instances: 1, max_seq_len: 65536}
            generation: {instances: 1}
        """).config();
    assertEquals(131072, c.affinity().maxPromptTokens());
    assertEquals(65536, c.context().embedded().orElseThrow().maxSeqLen());
    assertEquals(0, c.generation().embedded().orElseThrow().maxSeqLen(), "0: one rank's KV cache");
    assertEquals(0, parse(MINIMAL).config().affinity().maxPromptTokens());
    ConfigException tenants = fails("affinity:\n  tenant_isolation: true\n" + MINIMAL);
    assertTrue(tenants.getMessage().contains("test.yaml:2:21: affinity.tenant_isolation: scopes conversations and the KV "
        + "cache per API key, so it needs affinity.api_keys"), tenants.getMessage());
    assertTrue(parse("affinity:\n  api_keys: [k]\n  tenant_isolation: true\n" + MINIMAL).config().affinity().tenantIsolation());
    ConfigException e = fails("affinity:\n  max_prompt_tokens: 0\n" + MINIMAL);
    assertTrue(e.getMessage().contains("affinity.max_prompt_tokens"), e.getMessage());
  }

  @Test
  void defaultsAreUpstreams() {
    DisaggConfig c = parse(MINIMAL).config();
    assertEquals("localhost", c.hostname());
    assertEquals(8000, c.port());
    assertEquals(1, c.maxRetries());
    assertEquals(ScheduleStyle.CONTEXT_FIRST, c.scheduleStyle());
    assertEquals(SubagentScope.CONTEXT, c.subagentScope());
    assertTrue(c.subagentHeader().isEmpty());
    assertEquals("round_robin", c.context().router().type());
    assertEquals(1, c.context().numInstances());
    assertEquals(10, c.serverKeepAliveTimeout());
    assertFalse(c.allowRequestChatTemplate());
    assertEquals(AffinitySettings.DEFAULT_SESSION_HEADERS, c.affinity().sessionHeaders());
    assertTrue(c.nodeId() >= 0 && c.nodeId() <= 255);
  }

  static Stream<Arguments> invalidConfigs() {
    return Stream.of(
        Arguments.of("port: 70000\n" + MINIMAL, "test.yaml:1:7: port: expected an integer in [1, 65535], found 70000"),
        Arguments.of("port: \"8000\"\n" + MINIMAL, "test.yaml:1:7: port: expected an integer, found the string \"8000\""),
        Arguments.of("node_id: 256\n" + MINIMAL, "test.yaml:1:10: node_id: expected an integer in [0, 255], found 256"),
        Arguments.of("schedule_style: ctx_first\n" + MINIMAL,
            "test.yaml:1:17: schedule_style: expected context_first or generation_first, found \"ctx_first\""),
        Arguments.of("subagent_affinity_scope: parent\n" + MINIMAL,
            "subagent_affinity_scope: expected context or both, found \"parent\""),
        Arguments.of("allow_request_chat_template: \"yes\"\n" + MINIMAL,
            "allow_request_chat_template: expected true or false, found the string \"yes\""),
        Arguments.of("generation_servers:\n  urls: [\"g0:8002\"]\n",
            "test.yaml:1:1: context_servers: is required"),
        Arguments.of("context_servers:\n  urls: [\"c0:8001\", \"c1:8001\"]\ngeneration_servers:\n  urls: [\"g0:8002\"]\n",
            "test.yaml:2:9: context_servers.urls: has 2 entries but num_instances is 1 (the default); list one host:port per instance and set num_instances: 2"),
        Arguments.of("context_servers:\n  urls: [\"c0\"]\ngeneration_servers:\n  urls: [\"g0:8002\"]\n",
            "test.yaml:2:10: context_servers.urls[0]: expected host:port, found \"c0\""),
        Arguments.of("context_servers:\n  num_instances: 2\n  urls: [\"c0:1\", \"c0:1\"]\ngeneration_servers:\n  urls: [\"g0:8002\"]\n",
            "context_servers.urls: lists c0:1 twice"),
        Arguments.of("""
            context_servers:
              urls: ["c0:8001"]
              router:
                type: conversation
                args:
                  max_sessions: 10
            generation_servers:
              urls: ["g0:8002"]
            """,
            "test.yaml:5:5: context_servers.router.args: router arguments sit beside type, not under args: TensorRT-LLM "
                + "silently ignores a nested args map. Write `router: {type: conversation, max_sessions: 10}`"),
        Arguments.of("max_batch_size: 64\n" + MINIMAL.replace("urls: [\"g0:8002\"]", "urls: [\"g0:8002\"]\n  max_batch_size: 128"),
            "test.yaml:6:19: generation_servers.max_batch_size: conflicts with the top-level max_batch_size (64, line 1), which every section inherits; found 128"),
        Arguments.of("conditional_disagg_config:\n  max_local_prefill_length: 10\n" + MINIMAL,
            "conditional_disagg_config: requires generation_servers.router.type: kv_cache_aware (found round_robin)"),
        Arguments.of("disagg_cluster:\n  cluster_name: x\n" + MINIMAL, "disagg_cluster.cluster_uri: is required"),
        Arguments.of("disagg_cluster:\n  cluster_uri: http://x\n  bogus: 1\n" + MINIMAL, "disagg_cluster.bogus: unknown key"),
        Arguments.of("otlp_config:\n  endpoint: x\n" + MINIMAL, "otlp_config.endpoint: unknown key (known: otlp_traces_endpoint)"),
        Arguments.of("otlp_config:\n  otlp_traces_endpoint: collector:4317\n" + MINIMAL,
            "test.yaml:2:25: otlp_config.otlp_traces_endpoint: expected an http:// or https:// URL (OTLP/HTTP, e.g. "
                + "http://collector:4318/v1/traces), found \"collector:4317\""),
        Arguments.of("conversation_affinity_header_for_subagents: \"X Parent\"\n" + MINIMAL,
            "conversation_affinity_header_for_subagents: expected an HTTP header name"),
        Arguments.of("conversation_affinity_header_for_subagents: [X-Parent, \"X Grand\"]\n" + MINIMAL,
            "test.yaml:1:56: conversation_affinity_header_for_subagents[1]: expected an HTTP header name (letters, "
                + "digits and -), found \"X Grand\""),
        Arguments.of("conversation_affinity_header_for_subagents:\n  - X-Parent\n  - x-parent\n" + MINIMAL,
            "test.yaml:3:5: conversation_affinity_header_for_subagents[1]: repeats the header x-parent"),
        Arguments.of("conversation_affinity_header_for_subagents: []\n" + MINIMAL,
            "test.yaml:1:45: conversation_affinity_header_for_subagents: is an empty list"),
        Arguments.of("conversation_affinity_header_for_subagents: [X-Parent, 3.5, {a: 1}]\n" + MINIMAL,
            "test.yaml:1:61: conversation_affinity_header_for_subagents[2]: expected a string, found a mapping"),
        Arguments.of("affinity:\n  session_final_header: \"X Final\"\n" + MINIMAL,
            "test.yaml:2:25: affinity.session_final_header: expected an HTTP header name"),
        Arguments.of("affinity:\n  session_idle_ttl_seconds: 0\n" + MINIMAL,
            "test.yaml:2:29: affinity.session_idle_ttl_seconds: expected a number > 0.0, found 0"),
        Arguments.of("affinity:\n  soft_placement_margin: -0.5\n" + MINIMAL,
            "test.yaml:2:26: affinity.soft_placement_margin: expected a number >= 0, or false (off), found -0.5"),
        Arguments.of("affinity:\n  soft_placement_margin: true\n" + MINIMAL,
            "test.yaml:2:26: affinity.soft_placement_margin: expected a number >= 0, or false (off), found true"),
        Arguments.of("affinity:\n  io_threads: -1\n" + MINIMAL,
            "test.yaml:2:15: affinity.io_threads: expected an integer in [0, 4096], found -1"),
        Arguments.of("affinity:\n  io_threads: two\n" + MINIMAL,
            "test.yaml:2:15: affinity.io_threads: expected an integer"),
        Arguments.of("affinity:\n  prompt_prefix_bytes: -1\n" + MINIMAL,
            "test.yaml:2:24: affinity.prompt_prefix_bytes: expected an integer in [0, "),
        Arguments.of("affinity:\n  prompt_prefix_bytes: 1GB\n" + MINIMAL,
            "test.yaml:2:24: affinity.prompt_prefix_bytes: expected an integer"),
        Arguments.of("affinity:\n  kept_turn_bytes: -5\n" + MINIMAL,
            "test.yaml:2:20: affinity.kept_turn_bytes: expected an integer in [0, "),
        Arguments.of("affinity:\n  debug_header: true\n" + MINIMAL, "test.yaml:2:3: affinity.debug_header: unknown key"),
        Arguments.of("affinity:\n  request_timeout_seconds: 0\n" + MINIMAL,
            "affinity.request_timeout_seconds: expected a number > 0.0, found 0"),
        Arguments.of("affinity:\n  workers:\n    context: {instances: 2, rank: 2}\n" + MINIMAL.replace("  urls: [\"c0:8001\"]\n", ""),
            "affinity.workers.context.rank: unknown key"),
        Arguments.of("affinity:\n  workers:\n    context: {instances: 2}\n" + MINIMAL,
            "context_servers.urls: cannot be combined with affinity.workers.context"),
        Arguments.of("affinity:\n  workers:\n    context: {instances: 2, ranks: 2, executor: {num_ranks: 4}}\n"
                + MINIMAL.replace("  urls: [\"c0:8001\"]\n", "  num_instances: 2\n"),
            "affinity.workers.context.num_ranks: conflicts with affinity.workers.context.executor.num_ranks (4)"),
        Arguments.of("port: 1\nport: 2\n" + MINIMAL, "test.yaml:2:1: port: duplicate key (first at line 1)"),
        Arguments.of("context_servers: [1, 2]\ngeneration_servers:\n  urls: [\"g0:8002\"]\n",
            "test.yaml:1:18: context_servers: expected a mapping, found a list"),
        Arguments.of("context_servers:\n  urls: [\"c0:8001\"\n", "test.yaml:3:1: invalid YAML"));
  }

  @ParameterizedTest
  @MethodSource("invalidConfigs")
  void invalidConfigsFailWithThePreciseMessage(String yaml, String expected) {
    ConfigException e = fails(yaml);
    assertTrue(e.getMessage().contains(expected), () -> "expected '" + expected + "' in:\n" + e.getMessage());
  }

  @Test
  void everyErrorIsReportedNotJustTheFirst() {
    ConfigException e = fails("port: 0\nnode_id: 999\nmax_retries: -1\n" + MINIMAL);
    assertEquals(3, e.problems().size(), e.getMessage());
    assertEquals(List.of("port", "node_id", "max_retries"), e.problems().stream().map(ConfigProblem::keyPath).toList());
  }

  @Test
  void unknownTopLevelKeysAreInheritedByBothSections() {
    DisaggConfig c = parse("kv_cache_config: {enable_block_reuse: true}\ntensor_parallel_size: 4\n" + MINIMAL).config();
    assertEquals(4L, c.context().workerArgs().get("tensor_parallel_size"));
    assertEquals(4L, c.generation().workerArgs().get("tensor_parallel_size"));
    assertEquals(Map.of("enable_block_reuse", true), c.generation().workerArgs().get("kv_cache_config"));
    assertEquals(Map.of("tensor_parallel_size", 4L, "kv_cache_config", Map.of("enable_block_reuse", true)), c.inherited());
    // the same value in a section is not a conflict
    parse("tensor_parallel_size: 4\n" + MINIMAL.replace("urls: [\"c0:8001\"]", "urls: [\"c0:8001\"]\n  tensor_parallel_size: 4"));
  }

  @Test
  void returnPerfMetricsIsForcedIntoBothSections() {
    DisaggConfig c = parse("return_perf_metrics: true\n" + MINIMAL).config();
    assertEquals(true, c.context().workerArgs().get("return_perf_metrics"));
    assertEquals(true, c.generation().workerArgs().get("return_perf_metrics"));
  }

  @Test
  void routerArgumentsAreFlatAndKeepTheirLocation() {
    DisaggConfig c = parse("""
        context_servers:
          urls: ["c0:8001"]
          max_num_tokens: 8192
          router:
            type: Conversation
            max_sessions: 10
            match_threshold: 0.5
        generation_servers:
          urls: ["g0:8002"]
        """).config();
    RouterConfig r = c.context().router();
    assertEquals("conversation", r.type());
    assertEquals(10L, r.args().get("max_sessions"));
    assertEquals(0.5, r.args().get("match_threshold"));
    assertEquals(8192L, r.args().get("max_num_tokens"));
    assertEquals(new Location("test.yaml", 6, 19), r.locationOf("max_sessions"));
  }

  @Test
  void theSubAgentHeaderIsAStringOrAListInPriorityOrder() {
    DisaggConfig one = parse("conversation_affinity_header_for_subagents: X-Parent\n" + MINIMAL).config();
    assertEquals(List.of("X-Parent"), one.subagentHeaders());
    DisaggConfig list = parse("conversation_affinity_header_for_subagents: [X-Dynamo-Parent-Session-ID, X-Parent]\n"
        + MINIMAL).config();
    assertEquals(List.of("X-Dynamo-Parent-Session-ID", "X-Parent"), list.subagentHeaders());
    assertEquals("X-Dynamo-Parent-Session-ID", list.subagentHeader().orElseThrow());
    assertEquals(List.of("x-dynamo-parent-session-id", "x-parent"),
        dev.affinity.conversation.ConversationSettings.from(list).subagentHeaders());
    assertEquals(List.of(), parse(MINIMAL).config().subagentHeaders());
    assertEquals(List.of(), parse("conversation_affinity_header_for_subagents: null\n" + MINIMAL).config().subagentHeaders());
  }

  @Test
  void sessionLifecycleSettingsParse() {
    AffinitySettings d = parse(MINIMAL).config().affinity();
    assertEquals("x-dynamo-session-final", d.sessionFinalHeader());
    assertEquals(3600, d.sessionIdleTtlSeconds());
    AffinitySettings a = parse("affinity:\n  session_final_header: X-Session-End\n  session_idle_ttl_seconds: 90\n"
        + MINIMAL).config().affinity();
    assertEquals("x-session-end", a.sessionFinalHeader());
    assertEquals(90, a.sessionIdleTtlSeconds());
    assertTrue(d.softPlacementMargin().isEmpty(), "each router's default");
    assertEquals(0.25, parse("affinity:\n  soft_placement_margin: 0.25\n" + MINIMAL).config().affinity()
        .softPlacementMargin().getAsDouble());
    assertEquals(-1, parse("affinity:\n  soft_placement_margin: false\n" + MINIMAL).config().affinity()
        .softPlacementMargin().getAsDouble(), "off");
  }

  @Test
  void agentSchedulingSettingsParse() {
    AgentSettings d = parse(MINIMAL).config().affinity().agent();
    assertEquals(AgentSettings.defaults(), d);
    assertTrue(!d.priority() && !d.kvRetention(), "both off");
    AgentSettings set = parse("affinity:\n  agent_priority: true\n  kv_retention: true\n"
        + "  agent_priority_promotion_seconds: 2.5\n" + MINIMAL).config().affinity().agent();
    assertEquals(new AgentSettings(true, 2.5, true), set);
    ConfigException bad = fails("affinity:\n  agent_priority_promotion_seconds: 0\n" + MINIMAL);
    assertTrue(bad.getMessage().contains("affinity.agent_priority_promotion_seconds"), bad.getMessage());
    assertTrue(bad.getMessage().contains(":2:"), "the line: " + bad.getMessage());
    ConfigException notBool = fails("affinity:\n  kv_retention: sometimes\n" + MINIMAL);
    assertTrue(notBool.getMessage().contains("affinity.kv_retention"), notBool.getMessage());
  }

  @Test
  void promptPrefixBytesParse() {
    AffinitySettings unset = parse(MINIMAL).config().affinity();
    assertEquals(64L << 20, unset.promptPrefixBudget(512L << 20), "an eighth of the heap");
    assertEquals(256L << 20, unset.promptPrefixBudget(8L << 30), "at most 256 MiB");
    assertEquals(5000, parse("affinity:\n  prompt_prefix_bytes: 5000\n" + MINIMAL).config().affinity()
        .promptPrefixBudget(8L << 30), "as set");
    assertEquals(0, parse("affinity:\n  prompt_prefix_bytes: 0\n" + MINIMAL).config().affinity().promptPrefixBytes(),
        "none kept");
  }

  @Test
  void keptTurnBytesParse() {
    AffinitySettings unset = parse(MINIMAL).config().affinity();
    assertEquals(64L << 20, unset.keptTurnBudget(512L << 20), "an eighth of the heap");
    assertEquals(256L << 20, unset.keptTurnBudget(8L << 30), "at most 256 MiB");
    assertEquals(7000, parse("affinity:\n  kept_turn_bytes: 7000\n" + MINIMAL).config().affinity()
        .keptTurnBudget(8L << 30), "as set");
    assertEquals(0, parse("affinity:\n  kept_turn_bytes: 0\n" + MINIMAL).config().affinity().keptTurnBudget(8L << 30),
        "none kept");
  }

  @Test
  void ioThreadsParse() {
    assertEquals(0, parse(MINIMAL).config().affinity().ioThreads(), "one per processor");
    assertEquals(1, parse("affinity:\n  io_threads: 1\n" + MINIMAL).config().affinity().ioThreads());
  }

  @Test
  void scheduleStyleAndScopeParse() {
    DisaggConfig c = parse("schedule_style: generation_first\nsubagent_affinity_scope: both\n"
        + "conversation_affinity_header_for_subagents: X-Parent\n" + MINIMAL).config();
    assertEquals(ScheduleStyle.GENERATION_FIRST, c.scheduleStyle());
    assertEquals(1, c.scheduleStyle().wireValue());
    assertEquals(SubagentScope.BOTH, c.subagentScope());
  }

  @Test
  void embeddedWorkerShortcutsFoldIntoTheExecutorConfig() {
    DisaggConfig c = parse("""
        context_servers: {num_instances: 3}
        generation_servers: {}
        affinity:
          workers:
            context: {instances: 3, ranks: 4, preset: deepseek-v3-h100-dp, time_scale: 0.5}
            generation: {}
        """).config();
    WorkerPool p = c.context().embedded().orElseThrow();
    assertEquals(3, p.instances());
    assertEquals(4, p.ranks());
    assertEquals("deepseek-v3-h100-dp", p.executorConfig().get("preset"));
    assertEquals(Map.of("mode", "real", "time_scale", 0.5), p.executorConfig().get("clock"));
    assertEquals(1, c.generation().numInstances());
  }
}
