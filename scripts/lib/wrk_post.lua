-- wrk script for scripts/bench-frontend: POSTs one non-streaming completion per request and prints one
-- machine-readable line at the end (wrk's own report stays above it).
-- The body comes from WRK_BODY; the default asks for 4 tokens.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = os.getenv("WRK_BODY")
  or '{"model": "affinity-sim", "prompt": "Tell me a story about a fox", "max_tokens": 4}'

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT requests=%d duration_us=%d p50_us=%d p99_us=%d errors=%d non2xx=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.timeout, e.status))
end
