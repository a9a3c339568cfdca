package dev.affinity.routing;

import dev.affinity.kv.BlockHasher;
import dev.affinity.kv.HashAlgorithm;
import dev.affinity.worker.Worker;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code conversation} with upstream semantics ({@code ConversationRouter} in {@code tensorrt_llm/serve/router.py}). A request with a
 * routing key (conversation or sub-agent affinity id) sticks to the worker its key is bound to while
 * that worker is alive, present and not excluded (no overload gate: the worker's ADP cap is the
 * backpressure); otherwise the key is (re)bound to the least content-loaded worker. Without a key,
 * the prompt's block hashes (token ids, or the code points of its text) are matched against a trie of
 * earlier sessions: a match of at least {@code match_threshold} of the blocks reuses that session's
 * worker, else the least loaded worker gets a new implicit session. Sessions are kept in an LRU of
 * {@code max_sessions}; a removed worker's sessions are evicted. Load is content weight (text length
 * / 5, or tokens). On workers with visible ranks a binding also holds the rank.
 */
public final class ConversationRouter extends AbstractRouter implements PinKeeping {
  private final double matchThreshold;
  private final int tokensPerBlock;
  private final int hashSkipCount;
  private final long maxSessions;
  /** Soft first placement of sub-agents (off, as upstream, unless configured): margin per request token. */
  private final double softMargin;
  private final Map<String, Session> sessions = new LinkedHashMap<>(16, 0.75f, true);
  private final TrieNode root = new TrieNode();
  private final Map<String, Long> contentLoad = new HashMap<>();
  private final Map<Long, Long> weightBySelection = new HashMap<>();
  private long implicitCounter;

  private static final class Session {
    Candidate candidate;
    long[] hashes;

    Session(Candidate candidate, long[] hashes) {
      this.candidate = candidate;
      this.hashes = hashes;
    }
  }

  private static final class TrieNode {
    final Map<Long, TrieNode> children = new HashMap<>();
    final Set<String> sessions = new HashSet<>();
  }

  public ConversationRouter(RouterContext context, double matchThreshold, int tokensPerBlock, int hashSkipCount,
      long maxSessions) {
    this(context, matchThreshold, tokensPerBlock, hashSkipCount, maxSessions, -1);
  }

  /**
   * @param softMargin soft first placement of sub-agents: a sub-agent's first turn goes to its root's worker while
   *     that worker's content load is at most {@code softMargin} x the request's weight above the least loaded one,
   *     and its later turns follow its own binding; negative: off (upstream: every turn follows the root)
   */
  public ConversationRouter(RouterContext context, double matchThreshold, int tokensPerBlock, int hashSkipCount,
      long maxSessions, double softMargin) {
    super(context);
    this.softMargin = softMargin;
    this.matchThreshold = matchThreshold;
    this.tokensPerBlock = tokensPerBlock;
    this.hashSkipCount = hashSkipCount;
    this.maxSessions = maxSessions;
  }

  static ConversationRouter create(RouterContext context, RouterArgs args) {
    double threshold = args.getDouble("match_threshold", 0.75, 0, 1);
    int tpb = args.getInt("tokens_per_block", 128, 1, 1 << 20);
    args.getBoolean("use_token_ids", false);  // token ids are used whenever the request has them
    int skip = args.getInt("hash_skip_count", 0, 0, Integer.MAX_VALUE);
    long max = args.getLong("max_sessions", 100_000, 1, Long.MAX_VALUE);
    double soft = context.softPlacementMargin(args, -1);
    args.accept("use_harmony");
    args.done(RouterArgs.ADOPTED);
    return new ConversationRouter(context, threshold, tpb, skip, max, soft);
  }

  @Override
  public boolean usesKvEvents() {
    return false;
  }

  @Override
  public String type() {
    return "conversation";
  }

  /** Sessions currently bound. */
  public int sessionCount() {
    synchronized (lock) {
      return sessions.size();
    }
  }

  @Override
  public void adoptPin(String key, Candidate candidate) {
    synchronized (lock) {
      Session s = sessions.get(key);
      if (s == null || !s.candidate.equals(candidate)) {
        bind(key, candidate, s == null ? new long[0] : s.hashes);
      }
    }
  }

  @Override
  public boolean releasePin(String key) {
    synchronized (lock) {
      Session s = sessions.remove(key);
      if (s == null) {
        return false;
      }
      trieRemove(key, s.hashes);
      return true;
    }
  }

  @Override
  public int pinCount() {
    return sessionCount();
  }

  /** The candidate a key is bound to, or null. */
  public Candidate boundTo(String key) {
    synchronized (lock) {
      Session s = sessions.get(key);
      return s == null ? null : s.candidate;
    }
  }

  @Override
  protected Object prepare(RoutingRequest request, List<Worker> candidates) {
    if (request.routingKey() != null) {
      return null;
    }
    int[] seq;
    int skip = hashSkipCount;
    if (request.hasTokens()) {
      seq = request.tokens();
    } else if (request.text() != null) {
      seq = request.text().codePoints().toArray();
      skip *= 5;
    } else {
      return new long[0];
    }
    if (skip > 0) {
      seq = Arrays.copyOfRange(seq, Math.min(skip, seq.length), seq.length);
    }
    return new BlockHasher(HashAlgorithm.V1_BLOCK_KEY, tokensPerBlock).keys(seq, null);
  }

  private long weight(RoutingRequest r) {
    return r.textLength() > 0 ? Math.max(r.textLength() / 5, 1) : Math.max(r.numTokens(), 1);
  }

  private Worker leastContentLoaded(List<Worker> candidates) {
    long best = Long.MAX_VALUE;
    List<Worker> tied = new ArrayList<>();
    for (Worker w : candidates) {
      long v = contentLoad.getOrDefault(w.id(), 0L);
      if (v < best) {
        best = v;
        tied.clear();
      }
      if (v == best) {
        tied.add(w);
      }
    }
    return pickTied(tied);
  }

  /** The sub-agent's own id when soft first placement applies (see {@link AffinityRouter}); else null. */
  private String softPlacementKey(RoutingRequest request) {
    String own = request.conversationId();
    if (softMargin < 0 || request.affinityId() == null || own == null || own.equals(request.routingKey())
        || context.fleet() != Fleet.CONTEXT) {
      return null;
    }
    return own;
  }

  @Override
  protected Choice choose(RoutingRequest request, List<Worker> candidates, Object prepared) {
    String key = request.routingKey();
    String own = softPlacementKey(request);
    if (own != null && !sessions.containsKey(own)) {
      Session root = sessions.get(key);
      Worker least = leastContentLoaded(candidates);
      if (root != null && candidates.contains(root.candidate.worker())
          && contentLoad.getOrDefault(root.candidate.workerId(), 0L) - contentLoad.getOrDefault(least.id(), 0L)
              <= softMargin * weight(request)) {
        bind(own, root.candidate, new long[0]);
        return new Choice(root.candidate, 0, 0, DecisionReason.FOLLOWED_ROOT);
      }
      Candidate c = leastLoadedRank(least);
      bind(own, c, new long[0]);
      return new Choice(c, 0, 0, DecisionReason.NEW_PIN);
    }
    key = own != null ? own : key;  // a sub-agent's later turns follow its own binding
    if (key != null) {
      Session s = sessions.get(key);  // refreshes the LRU position
      if (s != null && candidates.contains(s.candidate.worker())) {
        return new Choice(s.candidate, 0, 0, DecisionReason.PINNED);
      }
      Candidate c = leastLoadedRank(leastContentLoaded(candidates));
      bind(key, c, new long[0]);
      return new Choice(c, 0, 0, s == null ? DecisionReason.NEW_PIN : DecisionReason.RE_PINNED);
    }
    long[] hashes = (long[]) prepared;
    String bestSession = null;
    int bestDepth = 0;
    TrieNode node = root;
    for (int depth = 1; depth <= hashes.length; depth++) {
      node = node.children.get(hashes[depth - 1]);
      if (node == null) {
        break;
      }
      for (String sid : node.sessions) {
        Session s = sessions.get(sid);
        if (s != null && candidates.contains(s.candidate.worker())) {
          bestSession = sid;
          bestDepth = depth;
          break;
        }
      }
    }
    if (bestSession != null && hashes.length > 0 && (double) bestDepth / hashes.length >= matchThreshold) {
      Session s = sessions.get(bestSession);
      bind(bestSession, s.candidate, hashes);
      return new Choice(s.candidate, bestDepth, bestDepth * tokensPerBlock, DecisionReason.IMPLICIT_MATCH);
    }
    Candidate c = leastLoadedRank(leastContentLoaded(candidates));
    bind("conv_id:" + context.nodeId() + "_" + (implicitCounter++), c, hashes);
    return new Choice(c, 0, 0, DecisionReason.LOAD);
  }

  private void bind(String key, Candidate c, long[] hashes) {
    Session old = sessions.remove(key);
    if (old != null) {
      trieRemove(key, old.hashes);
    }
    sessions.put(key, new Session(c, hashes));
    trieInsert(key, hashes);
    Iterator<Map.Entry<String, Session>> it = sessions.entrySet().iterator();
    while (sessions.size() > maxSessions && it.hasNext()) {
      Map.Entry<String, Session> eldest = it.next();
      it.remove();
      trieRemove(eldest.getKey(), eldest.getValue().hashes);
    }
  }

  private void trieInsert(String sid, long[] hashes) {
    TrieNode node = root;
    for (long h : hashes) {
      node = node.children.computeIfAbsent(h, x -> new TrieNode());
      node.sessions.add(sid);
    }
  }

  private void trieRemove(String sid, long[] hashes) {
    removeFrom(root, hashes, 0, sid);
  }

  /** Walks down the session's path, then prunes empty nodes bottom-up; iterative (prompts may have 10^5+ blocks). */
  private static void removeFrom(TrieNode root, long[] hashes, int from, String sid) {
    TrieNode[] path = new TrieNode[hashes.length + 1];
    path[0] = root;
    int depth = 0;
    for (int i = from; i < hashes.length; i++) {
      TrieNode child = path[depth].children.get(hashes[i]);
      if (child == null) {
        break;
      }
      child.sessions.remove(sid);
      path[++depth] = child;
    }
    for (int d = depth; d > 0; d--) {
      TrieNode child = path[d];
      if (!child.sessions.isEmpty() || !child.children.isEmpty()) {
        break;
      }
      path[d - 1].children.remove(hashes[from + d - 1]);
    }
  }

  @Override
  protected void onSelected(Selection s) {
    long w = weight(s.request());
    contentLoad.merge(s.worker().id(), w, Long::sum);
    weightBySelection.put(s.id(), w);
  }

  @Override
  protected void onReleased(Selection s, Outcome outcome) {
    Long w = weightBySelection.remove(s.id());
    if (w != null) {
      contentLoad.merge(s.worker().id(), -w, Long::sum);
    }
  }

  @Override
  protected void onWorkerRemoved(String workerId) {
    Iterator<Map.Entry<String, Session>> it = sessions.entrySet().iterator();
    while (it.hasNext()) {
      Map.Entry<String, Session> e = it.next();
      if (e.getValue().candidate.workerId().equals(workerId)) {
        it.remove();
        trieRemove(e.getKey(), e.getValue().hashes);
      }
    }
    contentLoad.remove(workerId);
  }
}
