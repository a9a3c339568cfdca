package dev.affinity.routing;

import dev.affinity.worker.Worker;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;

/**
 * {@code sglang_cache_aware}: the SGLang router's {@code cache_aware} policy as a baseline, following
 * {@code sgl-router/src/policies/cache_aware.rs} and {@code tree.rs} (sgl-project/sglang at
 * 026f853 / 4d40eec) with the launcher's defaults ({@code sgl-router/py_src/sglang_router/router_args.py}
 * at 083d601: {@code cache_threshold} 0.3, {@code balance_abs_threshold} 64, {@code balance_rel_threshold}
 * 1.5, {@code eviction_interval_secs} 120, {@code max_tree_size} 2^26).
 *
 * <ul>
 *   <li>Load is the router's own count of requests in flight per worker. When
 *       {@code max - min > balance_abs_threshold} and {@code max > balance_rel_threshold * min}, the
 *       least loaded worker takes the request (and the prompt is still inserted for it).</li>
 *   <li>Otherwise the prompt is matched against an approximate radix tree of what was routed where
 *       (never against KV events): the deepest matched node gives the match and its first tenant the
 *       worker; a match rate above {@code cache_threshold} goes there, else to the tenant with the
 *       smallest tree. The prompt is then inserted for the chosen worker.</li>
 *   <li>Every {@code eviction_interval_secs} the tree drops each tenant's least recently used leaves
 *       until it holds at most {@code max_tree_size} units.</li>
 * </ul>
 *
 * <p>The tree is kept over prefix-chained blocks of {@code block_size} tokens (characters for text
 * prompts) instead of single characters: a match is counted in whole blocks. In prefill-decode mode
 * the gateway applies its main policy to both pools unless told otherwise, so the generation variant
 * is the same policy over the generation workers with a tree of its own. Tenants are workers; the
 * attention-DP rank is left to the worker (the gateway's {@code dp_aware} is off by default; with
 * {@code dp_aware: true} each rank is a tenant). Sub-agent headers are not read.
 */
public final class SglangCacheAwareRouter extends AbstractRouter {
  private final double cacheThreshold;
  private final int balanceAbsThreshold;
  private final double balanceRelThreshold;
  private final long evictionIntervalNanos;
  private final long maxTreeSize;
  private final int blockSize;
  private final boolean dpAware;
  private final Tree tree;
  private long lastEvictionNanos;

  public SglangCacheAwareRouter(RouterContext context, double cacheThreshold, int balanceAbsThreshold,
      double balanceRelThreshold, double evictionIntervalSeconds, long maxTreeSize, int blockSize, boolean dpAware) {
    super(context);
    this.cacheThreshold = cacheThreshold;
    this.balanceAbsThreshold = balanceAbsThreshold;
    this.balanceRelThreshold = balanceRelThreshold;
    this.evictionIntervalNanos = (long) (evictionIntervalSeconds * 1e9);
    this.maxTreeSize = maxTreeSize;
    this.blockSize = blockSize;
    this.dpAware = dpAware;
    this.tree = new Tree(blockSize);
    this.lastEvictionNanos = context.nanoClock().getAsLong();
  }

  static SglangCacheAwareRouter create(RouterContext context, RouterArgs args) {
    double threshold = args.getDouble("cache_threshold", 0.3, 0, 1);
    int abs = args.getInt("balance_abs_threshold", 64, 0, Integer.MAX_VALUE);
    double rel = args.getDouble("balance_rel_threshold", 1.5, 0, Double.MAX_VALUE);
    double eviction = args.getDouble("eviction_interval_secs", 120, 0, 1e9);
    long maxTree = args.getLong("max_tree_size", 1L << 26, 1, Long.MAX_VALUE);
    int block = args.getInt("block_size", 64, 1, 1 << 20);
    boolean dpAware = args.getBoolean("dp_aware", false);
    args.done(RouterArgs.ADOPTED);
    return new SglangCacheAwareRouter(context, threshold, abs, rel, eviction, maxTree, block, dpAware);
  }

  @Override
  public String type() {
    return "sglang_cache_aware";
  }

  /** The tree is fed by routing decisions only. */
  @Override
  public boolean usesKvEvents() {
    return false;
  }

  /** Units (tokens or characters) the tree holds for a tenant. */
  public long treeSize(Candidate tenant) {
    synchronized (lock) {
      return tree.size(tenant.toString());
    }
  }

  @Override
  protected Object prepare(RoutingRequest request, List<Worker> candidates) {
    return PromptBlocks.keys(request, blockSize);
  }

  @Override
  protected Choice choose(RoutingRequest request, List<Worker> workers, Object prepared) {
    long[] keys = (long[]) prepared;
    evictIfDue();
    List<Candidate> tenants = new ArrayList<>();
    for (Worker w : workers) {
      if (dpAware) {
        tenants.addAll(candidatesOf(w));
      } else {
        tenants.add(new Candidate(w, -1));
      }
    }
    for (Candidate t : tenants) {
      tree.addTenant(t.toString());
    }
    int max = Integer.MIN_VALUE;
    int min = Integer.MAX_VALUE;
    for (Candidate t : tenants) {
      max = Math.max(max, load(t).requests);
      min = Math.min(min, load(t).requests);
    }
    boolean imbalanced = max - min > balanceAbsThreshold && max > min * balanceRelThreshold;
    Candidate chosen;
    DecisionReason reason;
    int matched = 0;
    if (imbalanced) {
      chosen = tenants.get(0);
      for (Candidate t : tenants) {
        if (load(t).requests < load(chosen).requests) {
          chosen = t;
        }
      }
      reason = DecisionReason.LOAD;
    } else {
      Tree.Match m = tree.prefixMatch(keys, context.nanoClock().getAsLong());
      double rate = keys.length == 0 ? 0 : (double) m.blocks() / keys.length;
      String name = rate > cacheThreshold ? m.tenant() : tree.smallestTenant();
      chosen = null;
      for (Candidate t : tenants) {
        if (t.toString().equals(name)) {
          chosen = t;
        }
      }
      if (chosen == null) {  // a tenant no longer among the candidates: the first healthy worker
        chosen = tenants.get(0);
      }
      reason = rate > cacheThreshold ? DecisionReason.PREFIX : DecisionReason.LOAD;
      matched = rate > cacheThreshold ? m.blocks() : 0;
    }
    tree.insert(keys, chosen.toString(), context.nanoClock().getAsLong());
    return new Choice(chosen, matched, Math.min(matched * blockSize, request.numTokens()), reason);
  }

  private void evictIfDue() {
    long now = context.nanoClock().getAsLong();
    if (evictionIntervalNanos > 0 && now - lastEvictionNanos >= evictionIntervalNanos) {
      lastEvictionNanos = now;
      tree.evict(maxTreeSize);
    }
  }

  @Override
  protected void onWorkerRemoved(String workerId) {
    tree.removeTenantsOf(workerId);
  }

  /**
   * The multi-tenant approximate radix tree over prefix-chained block keys: a node per key, holding the
   * tenants (at most 64) that routed a prompt through it and when each last used it.
   */
  static final class Tree {
    private static final class Node {
      final long parent;
      final boolean root;
      long tenants;
      long[] lastUse = new long[0];

      Node(long parent, boolean root) {
        this.parent = parent;
        this.root = root;
      }

      boolean has(int tenant) {
        return (tenants & (1L << tenant)) != 0;
      }

      void touch(int tenant, long now) {
        if (lastUse.length <= tenant) {
          lastUse = java.util.Arrays.copyOf(lastUse, tenant + 1);
        }
        lastUse[tenant] = now;
      }
    }

    record Match(int blocks, String tenant) {}

    private final Map<Long, Node> nodes = new HashMap<>();
    private final List<String> names = new ArrayList<>();
    private final Map<String, Integer> ids = new HashMap<>();
    private final List<Long> units = new ArrayList<>();
    private final int blockSize;

    Tree(int blockSize) {
      this.blockSize = blockSize;
    }

    private int tenant(String name) {
      Integer id = ids.get(name);
      if (id == null) {
        if (names.size() == 64) {
          throw new IllegalStateException("sglang_cache_aware keeps at most 64 tenants");
        }
        id = names.size();
        names.add(name);
        units.add(0L);
        ids.put(name, id);
      }
      return id;
    }

    void addTenant(String name) {
      tenant(name);
    }

    /** Units (tokens or characters, in whole blocks) the tenant holds. */
    long size(String name) {
      Integer id = ids.get(name);
      return id == null ? 0 : units.get(id);
    }

    /** Records that the tenant routed the prompt: every node on its path gets the tenant, now. */
    void insert(long[] keys, String name, long now) {
      int t = tenant(name);
      long parent = 0;
      for (int i = 0; i < keys.length; i++) {
        Node n = nodes.get(keys[i]);
        if (n == null) {
          n = new Node(parent, i == 0);
          nodes.put(keys[i], n);
        }
        if (!n.has(t)) {
          n.tenants |= 1L << t;
          units.set(t, units.get(t) + blockSize);
        }
        n.touch(t, now);
        parent = keys[i];
      }
    }

    /**
     * The deepest node on the prompt's path and its first tenant ({@code "empty"} when none); that
     * tenant's last use is refreshed from the node up to the root.
     */
    Match prefixMatch(long[] keys, long now) {
      int depth = 0;
      while (depth < keys.length && nodes.containsKey(keys[depth])) {
        depth++;
      }
      Node deepest = depth == 0 ? null : nodes.get(keys[depth - 1]);
      if (deepest == null || deepest.tenants == 0) {
        return new Match(depth, "empty");
      }
      int t = Long.numberOfTrailingZeros(deepest.tenants);
      for (int i = depth - 1; i >= 0; i--) {
        nodes.get(keys[i]).touch(t, now);
      }
      return new Match(depth, names.get(t));
    }

    /** The tenant holding the fewest units (the first of equals, in the order tenants appeared). */
    String smallestTenant() {
      String best = "empty";
      long min = Long.MAX_VALUE;
      for (int t = 0; t < names.size(); t++) {
        if (units.get(t) < min) {
          min = units.get(t);
          best = names.get(t);
        }
      }
      return best;
    }

    /** Drops every tenant's least recently used leaves until it holds at most {@code maxSize} units. */
    void evict(long maxSize) {
      boolean over = false;
      for (long u : units) {
        over |= u > maxSize;
      }
      if (!over) {
        return;
      }
      Map<Long, Long> childTenants = new HashMap<>();  // key -> tenants holding one of its children
      for (Node n : nodes.values()) {
        if (!n.root) {
          childTenants.merge(n.parent, n.tenants, (a, b) -> a | b);
        }
      }
      record Leaf(long when, int tenant, long key) {}
      PriorityQueue<Leaf> queue = new PriorityQueue<>((a, b) -> Long.compare(a.when(), b.when()));
      for (Map.Entry<Long, Node> e : nodes.entrySet()) {
        long leafFor = e.getValue().tenants & ~childTenants.getOrDefault(e.getKey(), 0L);
        for (long m = leafFor; m != 0; m &= m - 1) {
          int t = Long.numberOfTrailingZeros(m);
          queue.add(new Leaf(e.getValue().lastUse[t], t, e.getKey()));
        }
      }
      while (!queue.isEmpty()) {
        Leaf leaf = queue.poll();
        Node n = nodes.get(leaf.key());
        if (units.get(leaf.tenant()) <= maxSize || n == null || !n.has(leaf.tenant())) {
          continue;
        }
        n.tenants &= ~(1L << leaf.tenant());
        units.set(leaf.tenant(), units.get(leaf.tenant()) - blockSize);
        if (n.tenants == 0) {
          nodes.remove(leaf.key());
        }
        Node parent = n.root ? null : nodes.get(n.parent);
        if (parent != null && parent.has(leaf.tenant()) && !heldBelow(n.parent, leaf.tenant())) {
          queue.add(new Leaf(parent.lastUse[leaf.tenant()], leaf.tenant(), n.parent));
        }
      }
    }

    /** Whether a tenant still holds a child of the node (a scan: eviction is rare). */
    private boolean heldBelow(long key, int tenant) {
      for (Node n : nodes.values()) {
        if (!n.root && n.parent == key && n.has(tenant)) {
          return true;
        }
      }
      return false;
    }

    /** Forgets the tenants of a removed worker (the worker itself, or its ranks). */
    void removeTenantsOf(String workerId) {
      long gone = 0;
      for (int t = 0; t < names.size(); t++) {
        if (names.get(t).equals(workerId) || names.get(t).startsWith(workerId + "#")) {
          gone |= 1L << t;
          units.set(t, 0L);
        }
      }
      long g = gone;
      nodes.values().forEach(n -> n.tenants &= ~g);
      nodes.values().removeIf(n -> n.tenants == 0);
    }
  }
}
