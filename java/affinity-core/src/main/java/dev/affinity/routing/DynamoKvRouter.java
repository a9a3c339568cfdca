package dev.affinity.routing;

import dev.affinity.worker.Worker;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * {@code dynamo_kv}: NVIDIA Dynamo's KV router as a baseline, following Dynamo 1.1.1's
 * {@code DefaultWorkerSelector} ({@code lib/kv-router/src/scheduling/selector.rs}), the active-sequence
 * accounting it reads ({@code lib/llm/src/kv_router/sequence.rs}, {@code potential_blocks_and_tokens})
 * and its documented disaggregated mode (docs {@code components/router}: "Disaggregated Serving").
 * Every (worker, attention-DP rank) is a candidate, scored by a cost (its "logit"):
 *
 * <pre>
 * logit = overlap_score_weight * prefill_blocks + decode_blocks
 * prefill_blocks = (active prefill tokens there + the request's tokens - overlap_blocks * block_size) / block_size
 * </pre>
 *
 * where {@code overlap_blocks} is the candidate's cached prefix from the KV events and the active
 * prefill tokens are the uncached tokens of the requests routed there whose prefill has not finished.
 * With {@code router_temperature} 0 (the default) the lowest logit wins, ties going to the candidate
 * with the smallest indexed tree, then at random; above 0 a candidate is drawn with probability
 * {@code softmax(-logit / ((max - min) * T))}.
 *
 * <p>As a prefill (context) router it tracks no decode blocks (Dynamo's prefill router disables active
 * block tracking). As a decode (generation) router it scores with overlap weight 0, without prefill
 * token tracking and without assuming KV reuse: {@code logit} is the KV blocks of the requests decoding
 * there plus this one's. Sub-agent headers are not read. Randomness comes from a fixed seed, so runs
 * repeat. Not modelled: the router's optional request queue ({@code router_queue_threshold}), host
 * and disk cache tiers, session affinity (off by default).
 */
public final class DynamoKvRouter extends AbstractRouter {
  private final double overlapWeight;
  private final double temperature;
  private final SplittableRandom random = new SplittableRandom(0x9E3779B97F4A7C15L);
  /** Per selection: its prefill tokens (context) or its KV blocks (generation), charged to its candidate. */
  private final Map<Long, Double> charged = new HashMap<>();

  public DynamoKvRouter(RouterContext context, double overlapWeight, double temperature) {
    super(context);
    this.overlapWeight = overlapWeight;
    this.temperature = temperature;
  }

  static DynamoKvRouter create(RouterContext context, RouterArgs args) {
    double weight = args.getDouble("overlap_score_weight", 1.0, 0, Double.MAX_VALUE);
    double temperature = args.getDouble("router_temperature", 0.0, 0, Double.MAX_VALUE);
    args.done(RouterArgs.ADOPTED);
    return new DynamoKvRouter(context, weight, temperature);
  }

  @Override
  public String type() {
    return "dynamo_kv";
  }

  /** Only the prefill router reads cached prefixes; the decode router balances KV blocks. */
  @Override
  public boolean usesKvEvents() {
    return context.fleet() == Fleet.CONTEXT;
  }

  @Override
  protected Object prepare(RoutingRequest request, List<Worker> candidates) {
    return context.fleet() == Fleet.CONTEXT ? PrefixMatches.lookup(this, index, request, candidates) : null;
  }

  /** The uncached tokens of the request at a candidate holding {@code overlapBlocks} of its blocks. */
  private static long newTokens(RoutingRequest r, int overlapBlocks, int blockSize) {
    return Math.max(0, r.numTokens() - (long) overlapBlocks * blockSize);
  }

  @Override
  protected Choice choose(RoutingRequest request, List<Worker> workers, Object prepared) {
    boolean prefill = context.fleet() == Fleet.CONTEXT;
    PrefixMatches matches = (PrefixMatches) prepared;
    List<Candidate> cands = new ArrayList<>();
    for (Worker w : workers) {
      cands.addAll(candidatesOf(w));
    }
    double[] logit = new double[cands.size()];
    int[] overlap = new int[cands.size()];
    for (int i = 0; i < cands.size(); i++) {
      Candidate c = cands.get(i);
      int bs = c.worker().info().tokensPerBlock();
      if (prefill) {
        overlap[i] = matches.blocks(locationOf(c));
        double prefillTokens = load(c).work + newTokens(request, overlap[i], bs);
        logit[i] = overlapWeight * prefillTokens / bs;
      } else {
        logit[i] = load(c).work + blocks(request, bs);
      }
    }
    int chosen = temperature > 0 ? softmax(logit) : lowest(cands, logit);
    Candidate c = cands.get(chosen);
    int bs = c.worker().info().tokensPerBlock();
    DecisionReason reason = overlap[chosen] > 0 ? DecisionReason.PREFIX : DecisionReason.LOAD;
    return new Choice(c, overlap[chosen], overlap[chosen] * bs, reason);
  }

  /** The request's KV blocks (its prompt; output blocks are not tracked by default). */
  private static double blocks(RoutingRequest r, int blockSize) {
    return (r.numTokens() + blockSize - 1) / blockSize;
  }

  /** The lowest logit; ties to the smallest tree (blocks indexed there), then at random. */
  private int lowest(List<Candidate> cands, double[] logit) {
    double best = Double.POSITIVE_INFINITY;
    for (double l : logit) {
      best = Math.min(best, l);
    }
    List<Integer> tied = new ArrayList<>();
    long smallest = Long.MAX_VALUE;
    for (int i = 0; i < logit.length; i++) {
      if (logit[i] != best) {
        continue;
      }
      long tree = context.fleet() == Fleet.CONTEXT ? index.size(locationOf(cands.get(i))) : 0;
      if (tree < smallest) {
        smallest = tree;
        tied.clear();
      }
      if (tree == smallest) {
        tied.add(i);
      }
    }
    return tied.get(tied.size() == 1 ? 0 : random.nextInt(tied.size()));
  }

  /** A draw with probabilities {@code exp(-logit / ((max - min) T))}, normalized (uniform when all are equal). */
  private int softmax(double[] logit) {
    double min = Double.POSITIVE_INFINITY;
    double max = Double.NEGATIVE_INFINITY;
    for (double l : logit) {
      min = Math.min(min, l);
      max = Math.max(max, l);
    }
    double[] p = new double[logit.length];
    double sum = 0;
    for (int i = 0; i < logit.length; i++) {
      p[i] = min == max ? 1 : Math.exp(-(logit[i] - min) / ((max - min) * temperature));
      sum += p[i];
    }
    double u = random.nextDouble() * sum;
    for (int i = 0; i < p.length; i++) {
      u -= p[i];
      if (u <= 0) {
        return i;
      }
    }
    return p.length - 1;
  }

  @Override
  protected void onSelected(Selection s) {
    int bs = s.worker().info().tokensPerBlock();
    double charge = context.fleet() == Fleet.CONTEXT ? newTokens(s.request(), s.matchedBlocks(), bs)
        : blocks(s.request(), bs);
    load(s.candidate()).work += charge;
    charged.put(s.id(), charge);
  }

  /** A context leg's release is its prefill's end (its first token); a generation leg's, its end. */
  @Override
  protected void onReleased(Selection s, Outcome outcome) {
    Double charge = charged.remove(s.id());
    if (charge != null) {
      load(s.candidate()).work -= charge;
    }
  }
}
