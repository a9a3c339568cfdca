#!/usr/bin/env python3
"""The two legs of a disaggregated request sent directly to two workers, one after the other, for
scripts/bench-frontend: the context-only leg to CTX_URL, then the generation-only leg (the context's
disaggregated_params) to GEN_URL, over one keep-alive connection each (http.client). Prints one JSON
object with the p50 of each leg and of their sum, in milliseconds, over N requests after a warm-up.

usage: two_leg.py CTX_URL GEN_URL [N]
"""
import http.client
import json
import sys
import time
from urllib.parse import urlparse


def conn(url):
    u = urlparse(url)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=30)


def post(c, body):
    c.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    if r.status != 200:
        raise SystemExit("HTTP %d: %s" % (r.status, data[:300]))
    return json.loads(data)


def p50(values):
    s = sorted(values)
    return s[len(s) // 2]


def main():
    ctx_url, gen_url = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 500
    ctx, gen = conn(ctx_url), conn(gen_url)
    base = {"model": "affinity-sim", "prompt": "Tell me a story about a fox", "max_tokens": 4}
    legs = []
    for i in range(n + n // 5):
        t0 = time.perf_counter()
        answer = post(ctx, dict(base, disaggregated_params={"request_type": "context_only"}))
        t1 = time.perf_counter()
        params = dict(answer["choices"][0]["disaggregated_params"], request_type="generation_only")
        post(gen, dict(base, disaggregated_params=params))
        t2 = time.perf_counter()
        if i >= n // 5:  # after the warm-up
            legs.append(((t1 - t0) * 1000.0, (t2 - t1) * 1000.0, (t2 - t0) * 1000.0))
    print(json.dumps({"requests": n, "ctx_p50_ms": round(p50([l[0] for l in legs]), 3),
                      "gen_p50_ms": round(p50([l[1] for l in legs]), 3),
                      "sum_p50_ms": round(p50([l[2] for l in legs]), 3)}))


if __name__ == "__main__":
    main()
