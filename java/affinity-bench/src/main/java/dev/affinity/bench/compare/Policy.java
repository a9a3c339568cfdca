package dev.affinity.bench.compare;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A routing policy to compare: the router of each fleet and whether the sub-agent header is
 * configured, and with which scope. Applied over a fleet configuration, it replaces exactly those
 * keys (each router becomes {@code {type: ...}} with that type's default arguments); instances,
 * executors and everything else stay as the configuration has them.
 *
 * @param contextRouter    {@code context_servers.router.type}
 * @param generationRouter {@code generation_servers.router.type}
 * @param subagentScope    {@code context} or {@code both} to configure the sub-agent header
 *                         ({@code X-Dynamo-Parent-Session-ID}) with that scope; null to leave it out
 * @param affinity         keys set in the configuration's {@code affinity:} block (e.g. {@code soft_placement_margin})
 * @param contextArgs      arguments of the context router (beside its type)
 * @param generationArgs   arguments of the generation router (beside its type)
 */
public record Policy(String name, String description, String contextRouter, String generationRouter, String subagentScope,
    Map<String, Object> affinity, Map<String, Object> contextArgs, Map<String, Object> generationArgs) {
  public static final String SUBAGENT_HEADER = "X-Dynamo-Parent-Session-ID";

  public Policy {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(contextRouter, "contextRouter");
    Objects.requireNonNull(generationRouter, "generationRouter");
    affinity = Map.copyOf(affinity);
    contextArgs = Map.copyOf(contextArgs);
    generationArgs = Map.copyOf(generationArgs);
  }

  /** A policy whose routers take their default arguments. */
  public Policy(String name, String description, String contextRouter, String generationRouter, String subagentScope,
      Map<String, Object> affinity) {
    this(name, description, contextRouter, generationRouter, subagentScope, affinity, Map.of(), Map.of());
  }

  /** A policy that sets nothing in the {@code affinity:} block. */
  public Policy(String name, String description, String contextRouter, String generationRouter, String subagentScope) {
    this(name, description, contextRouter, generationRouter, subagentScope, Map.of());
  }

  /**
   * The {@code affinity:} keys of every policy but Affinity's own: agent-aware scheduling (request priority, KV
   * retention across tool calls) is part of Affinity's policy, not of the routers it is compared with.
   */
  static final Map<String, Object> WITHOUT_AGENT_SCHEDULING = Map.of("agent_priority", false, "kv_retention", false);

  /** The policies of the comparison in docs/benchmarks.md, in its order. */
  public static List<Policy> builtIn() {
    return builtInRouting().stream().map(p -> p.contextRouter().equals("affinity") ? p : new Policy(p.name(),
        p.description(), p.contextRouter(), p.generationRouter(), p.subagentScope(), merged(p.affinity(),
        WITHOUT_AGENT_SCHEDULING), p.contextArgs(), p.generationArgs())).toList();
  }

  private static Map<String, Object> merged(Map<String, Object> a, Map<String, Object> b) {
    Map<String, Object> m = new LinkedHashMap<>(b);
    m.putAll(a);
    return m;
  }

  /** The built-in policies' routers, header and scope. */
  private static List<Policy> builtInRouting() {
    return List.of(
        new Policy("round_robin", "round robin on both fleets, no sub-agent header", "round_robin", "round_robin", null),
        new Policy("load_balancing", "least loaded on both fleets, no sub-agent header", "load_balancing", "load_balancing", null),
        new Policy("kv_cache_aware", "KV-cache-aware context routing, least-loaded generation, no sub-agent header",
            "kv_cache_aware", "load_balancing", null),
        new Policy("conversation", "conversation routing by each agent's own session, no sub-agent header",
            "conversation", "load_balancing", null),
        new Policy("conversation+header", "conversation routing, sub-agents pinned to the parent's context instance "
            + "(scope context), generation least-loaded", "conversation", "load_balancing", "context"),
        new Policy("conversation+header-both", "conversation routing on both fleets, sub-agents pinned to the parent's "
            + "context and generation instances (scope both)", "conversation", "conversation", "both"),
        new Policy("affinity", "Affinity's own policy on both fleets, sub-agent header with scope context", "affinity", "affinity",
            "context"),
        new Policy("affinity-root-pinned", "Affinity's policy with soft first placement off: every turn of a sub-agent is routed by "
            + "its root's key", "affinity", "affinity", "context", Map.of("soft_placement_margin", false)),
        new Policy("dynamo_kv", "Dynamo's KV router (prefill cost from cached blocks, decode blocks) on both fleets, no "
            + "sub-agent header", "dynamo_kv", "dynamo_kv", null),
        new Policy("sglang_cache_aware", "SGLang's cache-aware gateway policy (approximate radix tree, balance gates) on both "
            + "fleets, no sub-agent header", "sglang_cache_aware", "sglang_cache_aware", null),
        new Policy("llmd_scorer", "llm-d's default scorers (prefix 3, queue 2, KV utilization 2) on both fleets, no sub-agent "
            + "header", "llmd_scorer", "llmd_scorer", null));
  }

  /**
   * The built-in policy of this name; an error lists the known names. A variant of a built-in policy names the
   * settings it changes in braces, separated by semicolons: {@code affinity{ctx.queue_externality_weight=0}} sets an
   * argument of the context router ({@code gen.} of the generation router), any other key a key of the {@code affinity:}
   * block ({@code affinity{agent_priority=false}}); values are YAML scalars. Ablations are variants.
   */
  public static Policy named(String name) {
    int brace = name.indexOf('{');
    if (brace >= 0) {
      if (!name.endsWith("}")) {
        throw new IllegalArgumentException("policy variant \"" + name + "\" must end with '}'");
      }
      return named(name.substring(0, brace).trim()).variant(name, name.substring(brace + 1, name.length() - 1));
    }
    for (Policy p : builtIn()) {
      if (p.name().equals(name)) {
        return p;
      }
    }
    throw new IllegalArgumentException("unknown policy \"" + name + "\"; known: "
        + String.join(", ", builtIn().stream().map(Policy::name).toList()));
  }

  /** This policy with the settings of {@code spec} ({@code key=value;...}) changed, named {@code variantName}. */
  private Policy variant(String variantName, String spec) {
    Map<String, Object> block = new LinkedHashMap<>(affinity);
    Map<String, Object> ctx = new LinkedHashMap<>(contextArgs);
    Map<String, Object> gen = new LinkedHashMap<>(generationArgs);
    for (String setting : spec.split(";")) {
      if (setting.isBlank()) {
        continue;
      }
      int eq = setting.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException("policy variant \"" + variantName + "\": \"" + setting.trim()
            + "\" is not key=value");
      }
      String key = setting.substring(0, eq).trim();
      Object value = new org.yaml.snakeyaml.Yaml().load(setting.substring(eq + 1).trim());
      if (key.startsWith("ctx.")) {
        ctx.put(key.substring(4), value);
      } else if (key.startsWith("gen.")) {
        gen.put(key.substring(4), value);
      } else {
        block.put(key, value);
      }
    }
    return new Policy(variantName, description + "; changed: " + spec, contextRouter, generationRouter, subagentScope,
        block, ctx, gen);
  }

  /** A copy of a parsed configuration (YAML maps) with this policy's keys replaced. */
  Map<String, Object> applyTo(Map<String, Object> yaml) {
    Map<String, Object> out = new LinkedHashMap<>(yaml);
    out.put("context_servers", withRouter(out.get("context_servers"), contextRouter, contextArgs));
    out.put("generation_servers", withRouter(out.get("generation_servers"), generationRouter, generationArgs));
    if (subagentScope == null) {
      out.remove("conversation_affinity_header_for_subagents");
      out.remove("subagent_affinity_scope");
    } else {
      out.put("conversation_affinity_header_for_subagents", SUBAGENT_HEADER);
      out.put("subagent_affinity_scope", subagentScope);
    }
    if (!affinity.isEmpty()) {
      Map<String, Object> block = new LinkedHashMap<>();
      if (out.get("affinity") instanceof Map<?, ?> m) {
        m.forEach((k, v) -> block.put(String.valueOf(k), v));
      }
      block.putAll(affinity);
      out.put("affinity", block);
    }
    return out;
  }

  private static Map<String, Object> withRouter(Object section, String type, Map<String, Object> args) {
    Map<String, Object> s = new LinkedHashMap<>();
    if (section instanceof Map<?, ?> m) {
      m.forEach((k, v) -> s.put(String.valueOf(k), v));
    }
    Map<String, Object> router = new LinkedHashMap<>();
    router.put("type", type);
    router.putAll(args);
    s.put("router", router);
    return s;
  }
}
