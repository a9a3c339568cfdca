-- wrk script for scripts/bench-frontend's cold-start runs: as wrk_post.lua, but each thread stops after
-- WRK_MAX_REQUESTS answers (run it with -t1 for an exact total), so a run covers the first N requests of a
-- fresh frontend whatever their speed.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = os.getenv("WRK_BODY")
  or '{"model": "affinity-sim", "prompt": "Tell me a story about a fox", "max_tokens": 4}'
local max = tonumber(os.getenv("WRK_MAX_REQUESTS") or "10000")
local answered = 0

function response(status, headers, body)
  answered = answered + 1
  if answered >= max then
    wrk.thread:stop()
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT requests=%d duration_us=%d p50_us=%d p99_us=%d errors=%d non2xx=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.timeout, e.status))
end
