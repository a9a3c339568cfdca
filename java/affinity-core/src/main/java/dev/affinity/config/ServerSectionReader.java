package dev.affinity.config;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.SequenceNode;

/**
 * Reads the {@code context_servers} and {@code generation_servers} sections of a disaggregated YAML, as
 * TensorRT-LLM's {@code tensorrt_llm/llmapi/disagg_utils.py} does: {@code num_instances}, {@code urls},
 * {@code router}, and every other key as a worker argument (top-level keys are inherited by both sections;
 * a section may not contradict them). A section is URLs or an embedded worker pool, never both. Problems
 * are reported through the {@link YamlReader}.
 */
final class ServerSectionReader {
  /** Worker arguments that also tell the routers a worker's capacity. */
  private static final List<String> ROUTER_ADOPTED = List.of("max_batch_size", "max_num_tokens");

  /** Section keys whose explicit null means "absent" (the default). */
  private static final Set<String> OPTIONAL_KEYS = Set.of("num_instances", "urls", "router");

  private final YamlReader r;
  private final Node root;
  private final Map<String, NodeTuple> top;
  /** Sections that need workers and name none (no urls, no disagg_cluster, no embedded pool). */
  private final List<NodeTuple> withoutWorkers = new ArrayList<>();

  ServerSectionReader(YamlReader r, Node root, Map<String, NodeTuple> top) {
    this.r = r;
    this.root = root;
    this.top = top;
  }

  ServerSection read(String name, Map<String, Object> inherited, Map<String, NodeTuple> inheritedNodes,
      Optional<WorkerPool> embedded, boolean dynamic) {
    NodeTuple t = top.get(name);
    if (t == null) {
      r.error(root, name, "is required (a mapping with num_instances, urls and router)");
      return null;
    }
    // null is an empty section, as upstream's `context_servers or {}`
    Map<String, NodeTuple> m = YamlReader.isNull(t.getValueNode()) ? new LinkedHashMap<>() : r.entries(t.getValueNode(), name);
    m.entrySet().removeIf(e -> OPTIONAL_KEYS.contains(e.getKey()) && YamlReader.isNull(e.getValue().getValueNode()));
    Long numInstances = null;
    List<String> urls = null;
    RouterConfig router = null;
    boolean badUrls = false;
    Map<String, Object> workerArgs = new LinkedHashMap<>();
    for (Map.Entry<String, NodeTuple> e : m.entrySet()) {
      String k = name + "." + e.getKey();
      switch (e.getKey()) {
        case "num_instances" -> numInstances = r.integer(e.getValue(), k, 0, 100000).orElse(null);
        case "urls" -> {
          int before = r.problems().size();
          urls = urls(e.getValue(), k);
          badUrls = r.problems().size() > before;
        }
        case "router" -> router = router(e.getValue(), k);
        default -> workerArgs.put(e.getKey(), r.plain(e.getValue().getValueNode()));
      }
    }
    for (Map.Entry<String, Object> e : inherited.entrySet()) {
      if (workerArgs.containsKey(e.getKey()) && !Objects.equals(workerArgs.get(e.getKey()), e.getValue())) {
        NodeTuple own = m.get(e.getKey());
        r.error(own == null ? t.getKeyNode() : own.getValueNode(), name + "." + e.getKey(),
            "conflicts with the top-level " + e.getKey() + " (" + e.getValue() + ", line "
                + (inheritedNodes.containsKey(e.getKey()) ? r.loc(inheritedNodes.get(e.getKey()).getValueNode()).line() : 0)
                + "), which every section inherits; found " + workerArgs.get(e.getKey()));
      } else {
        workerArgs.put(e.getKey(), e.getValue());
      }
    }
    if (router == null) {
      router = new RouterConfig(RouterConfig.DEFAULT_TYPE, r.loc(t.getKeyNode()), Map.of(), Map.of());
    }
    router = adoptRouterArgs(router, workerArgs);

    int instances;
    if (embedded.isPresent()) {
      WorkerPool pool = embedded.get();
      if (urls != null && !urls.isEmpty()) {
        r.error(m.get("urls").getKeyNode(), name + ".urls", "cannot be combined with affinity.workers."
            + fleetName(name) + " (line " + pool.location().line() + "): a fleet is either URLs or embedded workers");
      }
      if (numInstances != null && numInstances != pool.instances()) {
        r.error(m.get("num_instances").getValueNode(), name + ".num_instances", "is " + numInstances
            + " but affinity.workers." + fleetName(name) + ".instances is " + pool.instances());
      }
      instances = pool.instances();
      urls = List.of();
    } else {
      long n = numInstances == null ? 1 : numInstances;
      if (urls == null) {
        urls = List.of();
      }
      if (dynamic) {
        if (!urls.isEmpty()) {
          r.error(m.get("urls").getKeyNode(), name + ".urls", "cannot be combined with disagg_cluster (membership is dynamic)");
        }
      } else if (badUrls) {
        // reported where the urls were read; a count would be a second error about the same key
      } else if (urls.isEmpty() && n > 0) {
        withoutWorkers.add(t); // one error for the whole file: reportSectionsWithoutWorkers
      } else if (urls.size() != n) {
        r.error(m.containsKey("urls") ? m.get("urls").getValueNode() : t.getKeyNode(), name + ".urls",
            "has " + urls.size() + " entries but num_instances is " + n + (numInstances == null ? " (the default)" : "")
                + "; list one host:port per instance" + (numInstances == null && urls.size() > 1
                    ? " and set num_instances: " + urls.size() : ""));
      }
      instances = (int) n;
    }
    return new ServerSection(name, instances, urls, router, workerArgs, embedded, r.loc(t.getKeyNode()));
  }

  private static String fleetName(String section) {
    return section.startsWith("context") ? "context" : "generation";
  }

  private List<String> urls(NodeTuple t, String path) {
    List<String> out = r.stringList(t, path).orElse(List.of());
    Node seq = t.getValueNode();
    for (int i = 0; i < out.size(); i++) {
      String u = out.get(i).strip();
      String hostPort = u.replaceFirst("^https?://", "");
      int colon = hostPort.lastIndexOf(':');
      boolean ok = colon > 0 && colon < hostPort.length() - 1;
      if (ok) {
        try {
          int port = Integer.parseInt(hostPort.substring(colon + 1));
          ok = port > 0 && port < 65536;
        } catch (NumberFormatException e) {
          ok = false;
        }
      }
      if (!ok) {
        Node at = seq instanceof SequenceNode s && i < s.getValue().size() ? s.getValue().get(i) : seq;
        r.error(at, path + "[" + i + "]", "expected host:port, found \"" + u + "\"");
      }
      out.set(i, u);
    }
    return new ArrayList<>(out);
  }

  private RouterConfig router(NodeTuple t, String path) {
    Map<String, NodeTuple> m = r.entries(t.getValueNode(), path);
    String type = RouterConfig.DEFAULT_TYPE;
    Location typeLoc = r.loc(t.getKeyNode());
    Map<String, Object> args = new LinkedHashMap<>();
    Map<String, Location> locs = new HashMap<>();
    for (Map.Entry<String, NodeTuple> e : m.entrySet()) {
      String k = path + "." + e.getKey();
      if (e.getKey().equals("type")) {
        type = r.string(e.getValue(), k).map(s -> s.strip().toLowerCase(Locale.ROOT)).orElse(type);
        typeLoc = r.loc(e.getValue().getValueNode());
      } else if (e.getKey().equals("args")) {
        Object nested = r.plain(e.getValue().getValueNode());
        String example = nested instanceof Map<?, ?> nm && !nm.isEmpty()
            ? nm.entrySet().iterator().next().getKey() + ": " + nm.entrySet().iterator().next().getValue()
            : "max_sessions: 100000";
        r.error(e.getValue().getKeyNode(), k, "router arguments sit beside type, not under args: "
            + "TensorRT-LLM silently ignores a nested args map. Write `router: {type: " + type + ", " + example + "}`");
      } else {
        args.put(e.getKey(), r.plain(e.getValue().getValueNode()));
        locs.put(e.getKey(), r.loc(e.getValue().getValueNode()));
      }
    }
    return new RouterConfig(type, typeLoc, args, locs);
  }

  /** max_batch_size, max_num_tokens and kv_cache_config.tokens_per_block become router args unless set. */
  private static RouterConfig adoptRouterArgs(RouterConfig router, Map<String, Object> workerArgs) {
    Map<String, Object> args = new LinkedHashMap<>(router.args());
    for (String k : ROUTER_ADOPTED) {
      if (workerArgs.containsKey(k)) {
        args.putIfAbsent(k, workerArgs.get(k));
      }
    }
    if (workerArgs.get("kv_cache_config") instanceof Map<?, ?> kv && kv.containsKey("tokens_per_block")) {
      args.putIfAbsent("tokens_per_block", kv.get("tokens_per_block"));
    }
    return new RouterConfig(router.type(), router.typeLocation(), args, router.argLocations());
  }

  /**
   * One error naming every section without workers and the three ways to give them (upstream's templates
   * leave them out for its harness to add a disagg_cluster).
   */
  void reportSectionsWithoutWorkers() {
    if (withoutWorkers.isEmpty()) {
      return;
    }
    List<String> names = withoutWorkers.stream()
        .map(t -> ((org.yaml.snakeyaml.nodes.ScalarNode) t.getKeyNode()).getValue()).toList();
    String which = String.join(" and ", names);
    String first = names.get(0);
    r.error(withoutWorkers.get(0).getKeyNode(), first, which + (names.size() == 1 ? " has" : " have")
        + " no workers: no urls, no disagg_cluster and no embedded workers. Give workers one of three ways: list "
        + "them under urls (host:port, one per instance, e.g. " + first + ".urls: [\"host:8001\"]); add a "
        + "disagg_cluster section (cluster_uri: http://localhost:PORT served by this frontend, or etcd://HOST:PORT) "
        + "so that workers started with --disagg_cluster_uri register themselves; or embed workers under "
        + "affinity.workers." + fleetName(first));
  }

  void checkDuplicateUrls(ServerSection ctx, ServerSection gen) {
    for (ServerSection s : new ServerSection[] {ctx, gen}) {
      if (s == null) {
        continue;
      }
      Set<String> seen = new HashSet<>();
      for (String u : s.urls()) {
        if (!seen.add(u)) {
          r.error(top.get(s.name()).getValueNode(), s.name() + ".urls", "lists " + u + " twice");
        }
      }
    }
  }
}
