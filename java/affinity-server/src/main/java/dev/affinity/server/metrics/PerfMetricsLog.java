package dev.affinity.server.metrics;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.frontend.AdmittedRequest;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Selection;
import dev.affinity.tracing.RequestTrace;
import dev.affinity.tracing.RequestTracer;
import dev.affinity.worker.WorkerReport;
import java.util.ArrayDeque;
import java.util.function.LongSupplier;

/**
 * The records behind {@code GET /perf_metrics}, in the shape of upstream's aggregator
 * ({@code DisaggPerfMetricsCollector.get_perf_metrics} in {@code tensorrt_llm/serve/perf_metrics.py}): one record per
 * answered request with {@code ctx_server}, {@code gen_server}, {@code disagg_server_arrival_time},
 * {@code disagg_server_first_token_time} and each leg's {@code ctx_perf_metrics} / {@code gen_perf_metrics}, each
 * record handed out once, at most {@code perf_metrics_max_requests} kept (0: none, as upstream). Times are seconds
 * of one steady clock. Upstream fills the legs' records from each worker's own {@code /perf_metrics}; here they are
 * what the frontend measured of each leg (sent, first chunk, done) and what its worker reported (prompt tokens and
 * tokens reused, in blocks of the worker's size), for embedded and remote workers alike.
 */
public final class PerfMetricsLog implements RequestTracer {
  private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

  private final int maxRequests;
  private final LongSupplier nanoClock;
  private final ArrayDeque<ObjectNode> records = new ArrayDeque<>();

  public PerfMetricsLog(int maxRequests, LongSupplier nanoClock) {
    this.maxRequests = maxRequests;
    this.nanoClock = nanoClock;
  }

  @Override
  public RequestTrace start(AdmittedRequest request) {
    return maxRequests <= 0 ? RequestTrace.NONE : new Trace(seconds());
  }

  /** The records gathered since the last call, oldest first; each is handed out once. */
  public synchronized ArrayNode drain() {
    ArrayNode out = JSON.arrayNode();
    records.forEach(out::add);
    records.clear();
    return out;
  }

  private synchronized void add(ObjectNode record) {
    if (records.size() >= maxRequests) {
      records.removeFirst();
    }
    records.addLast(record);
  }

  private double seconds() {
    return nanoClock.getAsLong() / 1e9;
  }

  /** One request: its arrival, first token, and the latest leg of each fleet. Under the request's lock. */
  private final class Trace implements RequestTrace {
    private final double arrival;
    private double firstToken = -1;
    private LegRecord ctx;
    private LegRecord gen;

    Trace(double arrival) {
      this.arrival = arrival;
    }

    @Override
    public LegTrace legSent(Fleet fleet, long attempt, Selection selection) {
      LegRecord leg = new LegRecord(selection, attempt, seconds());
      if (fleet == Fleet.CONTEXT) {
        ctx = leg;
      } else {
        gen = leg;
      }
      return leg;
    }

    @Override
    public void streamStarted(RouteInfo route) {
      if (firstToken < 0) {
        firstToken = seconds();
      }
    }

    @Override
    public void ended(int status, String error, RouteInfo route) {
      if (status != 200 || gen == null) {
        return;
      }
      ObjectNode r = JSON.objectNode();
      r.put("ctx_server", ctx == null ? null : ctx.server);
      r.put("gen_server", gen.server);
      r.put("ctx_request_id", ctx == null ? gen.requestId : ctx.requestId);
      r.put("disagg_server_arrival_time", arrival);
      r.put("disagg_server_first_token_time", firstToken >= 0 ? firstToken : gen.lastToken);
      r.set("ctx_perf_metrics", ctx == null ? null : ctx.toJson());
      r.set("gen_perf_metrics", gen.toJson());
      add(r);
    }
  }

  /** One leg as the frontend saw it. */
  private final class LegRecord implements RequestTrace.LegTrace {
    final String server;
    final long requestId;
    final int tokensPerBlock;
    final double sent;
    double firstToken = -1;
    double lastToken = -1;
    WorkerReport report;

    LegRecord(Selection selection, long requestId, double sent) {
      this.server = selection.worker().id();
      this.requestId = requestId;
      this.tokensPerBlock = selection.worker().info().tokensPerBlock();
      this.sent = sent;
    }

    @Override
    public void chunk() {
      if (firstToken < 0) {
        firstToken = seconds();
      }
    }

    @Override
    public void completed(WorkerReport r) {
      report = r;
      lastToken = seconds();
      if (firstToken < 0) {
        firstToken = lastToken;
      }
    }

    JsonNode toJson() {
      ObjectNode leg = JSON.objectNode();
      leg.put("request_id", requestId);
      leg.put("ctx_request_id", requestId);
      ObjectNode perf = leg.putObject("perf_metrics");
      ObjectNode timing = perf.putObject("timing_metrics");
      timing.put("arrival_time", sent);
      timing.put("first_token_time", firstToken);
      timing.put("last_token_time", lastToken);
      if (report != null && report.promptTokens() > 0 && report.reusedTokens() >= 0) {
        long total = (report.promptTokens() + tokensPerBlock - 1) / tokensPerBlock;
        long reused = Math.min(total, report.reusedTokens() / tokensPerBlock);
        ObjectNode kv = perf.putObject("kv_cache_metrics");
        kv.put("num_total_allocated_blocks", total);
        kv.put("num_new_allocated_blocks", total - reused);
        kv.put("num_reused_blocks", reused);
        kv.put("num_missed_blocks", total - reused);
      }
      if (report != null && report.rank() >= 0) {
        leg.put("attention_dp_rank", report.rank());
      }
      return leg;
    }
  }
}
