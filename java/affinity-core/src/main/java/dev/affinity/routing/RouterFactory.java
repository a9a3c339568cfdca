package dev.affinity.routing;

import dev.affinity.config.ConfigException;
import dev.affinity.config.ConfigProblem;
import dev.affinity.config.RouterConfig;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Builds routers from their YAML section: the built-in types, then any {@link RouterProvider} on the
 * class path ({@link ServiceLoader}). An unknown type or a bad argument is a {@link ConfigException}
 * naming the YAML location.
 */
public final class RouterFactory {
  private final Map<String, RouterProvider> providers = new TreeMap<>();

  public RouterFactory() {
    this(RouterFactory.class.getClassLoader());
  }

  public RouterFactory(ClassLoader loader) {
    register(builtIn("round_robin", (ctx, args) -> {
      args.done(RouterArgs.ADOPTED);
      return new RoundRobinRouter(ctx);
    }));
    register(builtIn("load_balancing", LoadBalancingRouter::create));
    register(builtIn("kv_cache_aware", KvCacheAwareRouter::create));
    register(builtIn("conversation", ConversationRouter::create));
    register(builtIn("affinity", AffinityRouter::create));
    register(builtIn("dynamo_kv", DynamoKvRouter::create));
    register(builtIn("sglang_cache_aware", SglangCacheAwareRouter::create));
    register(builtIn("llmd_scorer", LlmdScorerRouter::create));
    for (RouterProvider p : ServiceLoader.load(RouterProvider.class, loader)) {
      register(p);
    }
  }

  private interface Builder {
    Router build(RouterContext ctx, RouterArgs args);
  }

  private static RouterProvider builtIn(String type, Builder b) {
    return new RouterProvider() {
      @Override
      public String type() {
        return type;
      }

      @Override
      public Router create(RouterContext context, RouterArgs args) {
        return b.build(context, args);
      }
    };
  }

  private void register(RouterProvider p) {
    providers.putIfAbsent(p.type().toLowerCase(java.util.Locale.ROOT), p);
  }

  /** Every type this factory can build. */
  public java.util.Set<String> types() {
    return new TreeSet<>(providers.keySet());
  }

  /**
   * Builds each fleet's router once, as {@code serve} does, and returns what it refuses (an unknown type
   * with the known ones, a bad argument), each naming the file, key and line; empty when both build.
   */
  public java.util.List<ConfigProblem> check(dev.affinity.config.DisaggConfig config) {
    java.util.List<ConfigProblem> problems = new java.util.ArrayList<>();
    for (dev.affinity.config.ServerSection section : java.util.List.of(config.context(), config.generation())) {
      Fleet fleet = section == config.context() ? Fleet.CONTEXT : Fleet.GENERATION;
      RouterContext context = new RouterContext(fleet, config.subagentScope(), System::nanoTime,
          new dev.affinity.kv.PrefixIndex(1), RouterContext.DEFAULT_TTL, config.nodeId());
      try {
        create(section.router(), section.name(), context);
      } catch (ConfigException e) {
        problems.addAll(e.problems());
      }
    }
    return problems;
  }

  public Router create(RouterConfig config, String sectionName, RouterContext context) {
    RouterProvider p = providers.get(config.type());
    if (p == null) {
      throw new ConfigException(java.util.List.of(new ConfigProblem(config.typeLocation(), sectionName + ".router.type",
          "unknown router type \"" + config.type() + "\" (known: " + String.join(", ", types()) + ")")));
    }
    return p.create(context, new RouterArgs(config, sectionName));
  }
}
