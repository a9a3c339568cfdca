package dev.affinity.routing;

/**
 * The arguments of the {@code affinity} router (docs/routing.md), read once from its {@link RouterArgs}.
 *
 * @param pinMarginTokens {@code pin_break_margin_tokens}: how much more than the best a pinned candidate may cost
 * @param placementTolerance {@code placement_tolerance}: a new key's candidates lie within this fraction of the
 *     request's tokens of the best cost
 * @param genPinMargin {@code generation_pin_margin}: the pin margin on the generation fleet (scope both)
 * @param loadEpsilon {@code load_epsilon}: no candidate above (1 + epsilon) x the mean in-flight requests
 * @param attentionFactor {@code attention_factor}: the quadratic term of the prefill work
 * @param maxKeys {@code max_keys}: pins and measured sessions kept
 * @param predictTtlSeconds {@code predict_ttl_seconds}: how long routed prefixes count as cached before KV events
 * @param trackRoutedBlocks {@code track_routed_blocks}: record the blocks of served requests
 * @param slotWeight {@code slot_weight}: the generation cost's weight of decode slots
 * @param kvWeight {@code kv_weight}: the generation cost's weight of KV tokens
 * @param softMargin soft first placement of sub-agents (context fleet): a sub-agent's first turn follows its root's
 *     pin while that costs at most {@code softMargin} x its prompt tokens more than the best candidate, and its later
 *     turns follow its own pin; negative: off (every turn follows the root's pin)
 * @param maxNumTokens the tokens one attention-DP rank computes per iteration (the lockstep bound's chunk); 0: each
 *     worker's own ({@link dev.affinity.worker.WorkerInfo#maxNumTokens})
 * @param evictionWeight {@code eviction_weight}: the work counted for each cached token a placement evicts from a
 *     full cache (0: none)
 * @param externalityWeight {@code queue_externality_weight}: the weight of the queueing externality (context fleet),
 *     the wait a placement imposes on the requests that arrive after it at its rank and its lockstep siblings (0: none)
 * @param rateWindowSeconds {@code rate_window_seconds}: the window of the measured arrival rates and time per work
 * @param siblingWaitEveryCall {@code sibling_wait: every_call}: the externality charges each call that a lockstep
 *     sibling's sessions send while a placement runs one of its iterations ({@code once}: each session's first call
 *     only)
 * @param queuedWorkReported {@code queued_work: reported}: the prefill queued at a rank counts what the rank reports
 *     it has computed of it ({@link ReportedProgress}; {@code routed}, the default: counted whole until released)
 */
record AffinityRouterSettings(long pinMarginTokens, double placementTolerance, double genPinMargin,
    double loadEpsilon, double attentionFactor, long maxKeys, double predictTtlSeconds, boolean trackRoutedBlocks,
    double slotWeight, double kvWeight, double softMargin, int maxNumTokens, double evictionWeight,
    double externalityWeight, double rateWindowSeconds, boolean siblingWaitEveryCall,
    boolean queuedWorkReported) {

  /**
   * By default a pin breaks as soon as another candidate costs less: the cost (uncached prefill plus queued work,
   * with predict-on-route prefixes) already keeps a key where its prefix is, so the pin only places new keys and
   * breaks ties (docs/benchmarks.md: a 4,096-token margin lost on every agentic workload).
   */
  public static final long DEFAULT_PIN_BREAK_MARGIN_TOKENS = 0;

  /**
   * No request-count bound by default ({@code load_epsilon: inf}): the cost counts the queued prefill work, and a
   * bound on request counts relative to the mean sent sessions away from their cached prefixes at low concurrency
   * (docs/benchmarks.md). A finite value bounds every candidate to (1 + epsilon) x the mean in-flight requests.
   */
  public static final double DEFAULT_LOAD_EPSILON = Double.POSITIVE_INFINITY;

  /** How the externality charges a lockstep sibling's arrivals (docs/routing.md, docs/benchmarks.md: how chosen). */
  public static final String DEFAULT_SIBLING_WAIT = "every_call";

  /** How a rank's queued prefill is counted (docs/routing.md, docs/benchmarks.md: how chosen). */
  public static final String DEFAULT_QUEUED_WORK = "routed";

  /** Soft first placement's default margin in Affinity's policy (docs/routing.md: how it was chosen). */
  public static final double DEFAULT_SOFT_PLACEMENT_MARGIN = 0;

  /** The settings {@code args} give, with the defaults of docs/routing.md; refuses unknown arguments. */
  static AffinityRouterSettings of(RouterContext context, RouterArgs args) {
    long margin = args.getLong("pin_break_margin_tokens", DEFAULT_PIN_BREAK_MARGIN_TOKENS, 0,
        Long.MAX_VALUE);
    double tolerance = args.getDouble("placement_tolerance", 0.1, 0, 100);
    double genMargin = args.getDouble("generation_pin_margin", 0.25, 0, Double.MAX_VALUE);
    double eps = args.getDouble("load_epsilon", DEFAULT_LOAD_EPSILON, 0, Double.MAX_VALUE);
    double f = args.getDouble("attention_factor", 2.2e-5, 0, 1);
    long maxKeys = args.getLong("max_keys", 200_000, 1, Long.MAX_VALUE);
    double ttl = args.getDouble("predict_ttl_seconds", 30, 0, 86400);
    boolean track = args.getBoolean("track_routed_blocks", true);
    double slots = args.getDouble("slot_weight", 1.0, 0, 1000);
    double kv = args.getDouble("kv_weight", 1.0, 0, 1000);
    double soft = context.softPlacementMargin(args, DEFAULT_SOFT_PLACEMENT_MARGIN);
    // 0: each worker's own (WorkerInfo.maxNumTokens); the section's max_num_tokens or the router's argument wins
    int chunk = args.has("max_num_tokens") ? args.getInt("max_num_tokens", 0, 1, Integer.MAX_VALUE) : 0;
    double eviction = args.getDouble("eviction_weight", 1.0, 0, 1000);
    double externality = args.getDouble("queue_externality_weight", 1.0, 0, 1000);
    double window = args.getDouble("rate_window_seconds", 60, 1e-3, 86400);
    String siblingWait = args.getChoice("sibling_wait", DEFAULT_SIBLING_WAIT, "every_call", "once");
    String queuedWork = args.getChoice("queued_work", DEFAULT_QUEUED_WORK, "reported", "routed");
    args.done(RouterArgs.ADOPTED);
    return new AffinityRouterSettings(margin, tolerance, genMargin, eps, f, maxKeys, ttl, track, slots, kv, soft, chunk,
        eviction, externality, window, siblingWait.equals("every_call"), queuedWork.equals("reported"));
  }
}
