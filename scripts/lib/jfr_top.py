#!/usr/bin/env python3
"""Where a JFR recording's CPU samples go, for scripts/bench-frontend.

Reads `jfr print --json --events jdk.ExecutionSample` output on stdin and prints the share of samples per
top frame (the method running) and per "owner" (the first frame, from the top, outside the JDK and Netty's
internals that belongs to a named area), so that both the hot leaf and the code that called it show.

usage: jfr print --json --events jdk.ExecutionSample REC.jfr | jfr_top.py [N]
"""
import collections
import json
import sys

AREAS = [
    ("dev.affinity.server.worker.", "Affinity worker client"),
    ("dev.affinity.server.http.", "Affinity frontend HTTP"),
    ("dev.affinity.disagg.", "Affinity orchestration"),
    ("dev.affinity.routing.", "Affinity routing"),
    ("dev.affinity.", "Affinity other"),
    ("com.fasterxml.jackson.", "Jackson JSON"),
    ("io.netty.handler.codec.http.", "Netty HTTP codec"),
    ("io.netty.channel.epoll.", "Netty transport (syscalls)"),
    ("io.netty.channel.nio.", "Netty transport (syscalls)"),
    ("sun.nio.", "Netty transport (syscalls)"),
    ("io.netty.buffer.", "Netty buffers"),
    ("io.netty.", "Netty other"),
    ("io.micrometer.", "metrics"),
]


def area(method):
    for prefix, name in AREAS:
        if method.startswith(prefix):
            return name
    return "JDK / other"


def frame_name(f):
    m = f["method"]
    return "%s.%s" % (m["type"]["name"].replace("/", "."), m["name"])


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    events = json.load(sys.stdin)["recording"]["events"]
    leaf = collections.Counter()
    areas = collections.Counter()
    for e in events:
        frames = e["values"]["stackTrace"]["frames"] if e["values"].get("stackTrace") else []
        if not frames:
            continue
        names = [frame_name(f) for f in frames]
        leaf[names[0]] += 1
        areas[area(names[0])] += 1
    total = sum(leaf.values()) or 1
    print("samples: %d" % total)
    print("by area of the running method:")
    for a, c in areas.most_common():
        print("  %5.1f%%  %s" % (100.0 * c / total, a))
    print("top methods:")
    for m, c in leaf.most_common(n):
        print("  %5.1f%%  %s" % (100.0 * c / total, m))


if __name__ == "__main__":
    main()
