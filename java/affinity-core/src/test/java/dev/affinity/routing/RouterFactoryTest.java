package dev.affinity.routing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.ConfigException;
import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.worker.Worker;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class RouterFactoryTest {

  private static DisaggConfig cfg(String router) {
    return ConfigLoader.parse("context_servers:\n  urls: [\"c:1\"]\n  router: " + router
        + "\ngeneration_servers:\n  urls: [\"g:1\"]\n", "r.yaml").config();
  }

  private static Router build(String router) {
    DisaggConfig c = cfg(router);
    return new RouterFactory().create(c.context().router(), "context_servers", RouterContext.of(Fleet.CONTEXT));
  }

  @Test
  void everyBuiltInTypeBuildsAndAnExampleProviderPlugsIn() {
    RouterFactory f = new RouterFactory();
    assertEquals(Set.of("affinity", "conversation", "kv_cache_aware", "load_balancing", "round_robin", "dynamo_kv",
        "sglang_cache_aware", "llmd_scorer", "example_first"), f.types());
    for (String type : f.types()) {
      assertEquals(type, build("{type: " + type + "}").type());
    }
  }

  @Test
  void theExampleProviderReadsItsFlatArguments() {
    Router r = build("{type: example_first, skip: 1}");
    Worker a = RouterTestSupport.worker("a");
    Worker b = RouterTestSupport.worker("b");
    r.addWorker(a);
    r.addWorker(b);
    assertEquals("b", r.select(RouterTestSupport.req(1, null), Set.of()).worker().id());
    ConfigException e = assertThrows(ConfigException.class, () -> build("{type: example_first, skip: x}"));
    assertTrue(e.getMessage().contains("context_servers.router.skip: expected an integer"), e.getMessage());
  }

  @Test
  void unknownTypesAndArgumentsAreConfigErrorsWithTheirLocation() {
    ConfigException type = assertThrows(ConfigException.class, () -> build("{type: fastest}"));
    assertTrue(type.getMessage().contains("r.yaml:3:18: context_servers.router.type: unknown router type \"fastest\""
        + " (known: affinity, conversation, dynamo_kv, example_first, kv_cache_aware, llmd_scorer, load_balancing, round_robin, "
        + "sglang_cache_aware)"), type.getMessage());
    ConfigException arg = assertThrows(ConfigException.class, () -> build("{type: conversation, max_session: 10}"));
    assertTrue(arg.getMessage().contains("r.yaml:3:45: context_servers.router.max_session: unknown argument for router type "
        + "conversation (known:"), arg.getMessage());
    ConfigException range = assertThrows(ConfigException.class, () -> build("{type: conversation, match_threshold: 1.5}"));
    assertTrue(range.getMessage().contains("match_threshold: expected a number in [0.0, 1.0], found 1.5"), range.getMessage());
  }

  @Test
  void adoptedSectionArgumentsAreAcceptedByEveryType() {
    DisaggConfig c = dev.affinity.config.ConfigLoader.parse("""
        context_servers:
          urls: ["c:1"]
          max_batch_size: 32
          max_num_tokens: 4096
          kv_cache_config: {tokens_per_block: 64}
          router: {type: round_robin}
        generation_servers:
          urls: ["g:1"]
        """, "a.yaml").config();
    for (String type : List.of("round_robin", "load_balancing", "kv_cache_aware", "conversation", "affinity")) {
      var rc = new dev.affinity.config.RouterConfig(type, c.context().router().typeLocation(), c.context().router().args(),
          c.context().router().argLocations());
      assertEquals(type, new RouterFactory().create(rc, "context_servers", RouterContext.of(Fleet.CONTEXT)).type());
    }
  }
}
