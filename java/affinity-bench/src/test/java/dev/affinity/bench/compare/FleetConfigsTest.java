package dev.affinity.bench.compare;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.ConfigException;
import dev.affinity.config.DisaggConfig;
import dev.affinity.config.SubagentScope;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FleetConfigsTest {
  @Test
  void everyBuiltInPolicyYieldsAValidConfigurationWithItsRoutersHeaderAndScope() {
    FleetConfigs fleet = FleetConfigs.builtIn();
    assertEquals(4, fleet.asWritten().context().embedded().orElseThrow().instances());
    for (Policy p : Policy.builtIn()) {
      DisaggConfig c = fleet.under(p);
      assertEquals(p.contextRouter(), c.context().router().type(), p.name());
      assertEquals(p.generationRouter(), c.generation().router().type(), p.name());
      assertEquals(p.subagentScope() != null, c.subagentHeader().isPresent(), p.name());
      if (p.subagentScope() != null) {
        assertEquals(p.subagentScope().equals("both") ? SubagentScope.BOTH : SubagentScope.CONTEXT, c.subagentScope(), p.name());
      }
      assertEquals(4, c.context().embedded().orElseThrow().instances(), "instances stay as written");
    }
  }

  @Test
  void theDefaultPoliciesAreTheElevenOfTheComparisonPeersUnderTheirRouterTypes() {
    assertEquals(List.of("round_robin", "load_balancing", "kv_cache_aware", "conversation", "conversation+header",
        "conversation+header-both", "affinity", "affinity-root-pinned", "dynamo_kv", "sglang_cache_aware", "llmd_scorer"),
        Policy.builtIn().stream().map(Policy::name).toList());
    assertEquals(-1, FleetConfigs.builtIn().under(Policy.named("affinity-root-pinned")).affinity().softPlacementMargin()
        .getAsDouble(), "soft first placement off");
    assertTrue(FleetConfigs.builtIn().under(Policy.named("affinity")).affinity().softPlacementMargin().isEmpty(),
        "the router's default");
    for (String peer : List.of("dynamo_kv", "sglang_cache_aware", "llmd_scorer")) {
      Policy p = Policy.named(peer);
      assertEquals(peer, p.contextRouter());
      assertEquals(peer, p.generationRouter());
      assertNull(p.subagentScope(), "no peer reads the sub-agent header");
    }
  }

  @Test
  void instanceCountsCanBeOverridden() {
    DisaggConfig c = FleetConfigs.builtIn().withInstances(8, 4).under(Policy.named("affinity"));
    assertEquals(8, c.context().embedded().orElseThrow().instances());
    assertEquals(8, c.context().numInstances());
    assertEquals(4, c.generation().embedded().orElseThrow().instances());
  }

  @Test
  void unknownPolicyNamesTheKnownOnes() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Policy.named("fastest"));
    assertTrue(e.getMessage().contains("round_robin") && e.getMessage().contains("affinity"), e.getMessage());
  }

  @Test
  void aBadFleetFileIsReportedWithItsNameAndLine(@TempDir Path dir) throws Exception {
    Path f = dir.resolve("fleet.yaml");
    Files.writeString(f, "context_servers:\n  num_instances: 1\n  router: {type: round_robin}\ngeneration_servers:\n"
        + "  num_instances: -3\n");
    ConfigException e = assertThrows(ConfigException.class, () -> FleetConfigs.load(f));
    assertTrue(e.getMessage().contains("fleet.yaml") && e.getMessage().contains(":5"), e.getMessage());
  }

  @Test
  void aFleetWithoutEmbeddedWorkersCannotChangeItsInstances(@TempDir Path dir) throws Exception {
    Path f = dir.resolve("remote.yaml");
    Files.writeString(f, "context_servers:\n  urls: [\"a:1\"]\ngeneration_servers:\n  urls: [\"b:1\"]\n");
    FleetConfigs fleet = FleetConfigs.load(f);
    assertFalse(fleet.asWritten().context().isEmbedded());
    assertThrows(IllegalArgumentException.class, () -> fleet.withInstances(2, 0));
  }

  @Test
  void aVariantChangesRouterArgumentsAndAffinityKeysOfItsBuiltInPolicy() {
    Policy v = Policy.named("affinity{ctx.queue_externality_weight=0; gen.kv_weight=2.5; soft_placement_margin=false}");
    assertEquals("affinity{ctx.queue_externality_weight=0; gen.kv_weight=2.5; soft_placement_margin=false}", v.name());
    DisaggConfig c = FleetConfigs.builtIn().under(v);
    assertEquals("affinity", c.context().router().type());
    assertEquals(0, ((Number) c.context().router().args().get("queue_externality_weight")).doubleValue());
    assertEquals(2.5, ((Number) c.generation().router().args().get("kv_weight")).doubleValue());
    assertEquals(-1, c.affinity().softPlacementMargin().orElseThrow(), "the affinity block's key");
    assertEquals(SubagentScope.CONTEXT, c.subagentScope(), "the rest of the policy stays");
  }

  @Test
  void aVariantsMistakesAreNamed() {
    IllegalArgumentException noValue = assertThrows(IllegalArgumentException.class,
        () -> Policy.named("affinity{ctx.queue_externality_weight}"));
    assertTrue(noValue.getMessage().contains("is not key=value"), noValue.getMessage());
    assertThrows(IllegalArgumentException.class, () -> Policy.named("nonesuch{a=1}"));
    assertThrows(IllegalArgumentException.class, () -> Policy.named("affinity{a=1"));
    // an argument the router does not know fails like a configuration would
    assertThrows(ConfigException.class, () -> FleetConfigs.builtIn().under(Policy.named("affinity{ctx.no_such_arg=1}")));
  }
}
