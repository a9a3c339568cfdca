#!/usr/bin/env python3
"""Where the distance to the zero-queue bound goes at TTFT p95, from a `bench compare --records` records.csv.

Per policy and seed, the p95 line is that seed's TTFT p95. A call is *over by its bound* when its zero-queue bound
is over the line, and *pushed over* when its bound is under the line and its TTFT over it. What held a pushed call up
is read from the records, first match wins:
  moved    it found less of its context cached than the pooled bound and ran on another (worker, rank) than its
           session's previous call;
  evicted  it found less cached than the pooled bound where its session's previous call ran;
  own      a prefill of more than LONG new tokens ran on its rank while it waited (sent to first token);
  sibling  such a prefill ran on another rank of its instance;
  other    none of these.
Also: the median wait past the bound of the pushed calls, and how far the p95 would fall if each group's pushed calls
had their bound (mean over seeds). Usage: where_p95.py records.csv [LONG=20000]
"""
import csv
import statistics
import sys
from collections import defaultdict

GROUPS = ("sibling", "own", "moved", "evicted", "other")


def p95(values):
    """The 0.95 quantile, nearest rank (as the bench reports it)."""
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(0.95 * len(v) + 0.999999) - 1))]


def analyse(rows, long_tokens):
    rows.sort(key=lambda r: r["send_us"])
    long_runs = defaultdict(list)  # (worker, rank) -> [(start, end)]
    for r in rows:
        if r["prompt"] - r["reused"] > long_tokens:
            long_runs[(r["worker"], r["rank"])].append((r["send_us"], r["send_us"] + r["ttft_us"]))
    last_place = {}
    for r in rows:
        r["moved"] = r["session"] in last_place and last_place[r["session"]] != (r["worker"], r["rank"])
        last_place[r["session"]] = (r["worker"], r["rank"])
    line = p95([r["ttft_us"] for r in rows])
    counts = dict.fromkeys(GROUPS, 0)
    over_bound = 0
    waits = []
    pushed = defaultdict(list)
    for r in rows:
        if r["bound_us"] > line:
            over_bound += 1
            continue
        if r["ttft_us"] <= line:
            continue
        start, end = r["send_us"], r["send_us"] + r["ttft_us"]

        def running(place):
            return any(s < end and e > start and not (s == start and e == end) for s, e in long_runs.get(place, ()))

        if r["reused"] < r["pooled"] and r["moved"]:
            g = "moved"
        elif r["reused"] < r["pooled"]:
            g = "evicted"
        elif running((r["worker"], r["rank"])):
            g = "own"
        elif any(running(p) for p in long_runs if p[0] == r["worker"] and p[1] != r["rank"]):
            g = "sibling"
        else:
            g = "other"
        counts[g] += 1
        pushed[g].append(r)
        waits.append(r["ttft_us"] - r["bound_us"])
    gains = {}
    for g in GROUPS:
        ids = {id(r) for r in pushed[g]}
        gains[g] = line - p95([r["bound_us"] if id(r) in ids else r["ttft_us"] for r in rows])
    return line, over_bound, counts, waits, gains


def main():
    path = sys.argv[1]
    long_tokens = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    runs = defaultdict(list)
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["status"] != "200":
                continue
            runs[(r["workload"], r["policy"], r["seed"])].append({
                "session": r["session"], "send_us": int(r["send_us"]), "ttft_us": int(r["ttft_us"]),
                "bound_us": int(r["bound_ttft_us"]), "prompt": int(r["prompt_tokens"]),
                "reused": int(r["reused_tokens"]), "pooled": int(r["pooled_reused_tokens"]),
                "worker": r["ctx_worker"], "rank": r["ctx_rank"]})
    table = defaultdict(list)
    for (workload, policy, seed), rows in sorted(runs.items()):
        table[(workload, policy)].append(analyse(rows, long_tokens))
    print("| workload | policy | p95 line ms | calls over it by their bound | pushed over it | beside a long prefill"
          " on the sibling rank | behind one on their rank | moved off their cached context | context evicted"
          " | other | median wait past the bound, ms | p95 fall if each group had its bound, ms"
          " (sibling / own / moved / evicted / other) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for (workload, policy), results in table.items():
        n = len(results)
        line = sum(r[0] for r in results) / n / 1000
        over = sum(r[1] for r in results) / n
        counts = {g: sum(r[2][g] for r in results) / n for g in GROUPS}
        waits = [w for r in results for w in r[3]]
        gains = {g: sum(r[4][g] for r in results) / n / 1000 for g in GROUPS}
        print(f"| {workload} | {policy} | {line:,.0f} | {over:.1f} | {sum(counts.values()):.1f} | "
              + " | ".join(f"{counts[g]:.1f}" for g in GROUPS)
              + f" | {statistics.median(waits) / 1000 if waits else 0:,.0f} | "
              + " / ".join(f"{gains[g]:,.0f}" for g in GROUPS) + " |")


if __name__ == "__main__":
    main()
