#!/usr/bin/env python3
"""Many concurrent streaming requests against an OpenAI-compatible endpoint, for scripts/bench-frontend.

Opens N connections (plain asyncio sockets, HTTP/1.1, no client library), then writes the N streaming
requests at once and reads every stream to its `data: [DONE]`. Per request it records the time to the
first `data:` event (TTFT, from its request being written) and to the end. Prints one JSON object:
completed, failed, TTFT and total percentiles in milliseconds, and the first errors.

usage: sse_load.py URL PATH STREAMS [MAX_TOKENS] [--chat]
"""
import asyncio
import json
import sys
import time
from urllib.parse import urlparse


def percentile(values, p):
    if not values:
        return None
    s = sorted(values)
    k = min(len(s) - 1, max(0, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


async def stream(host, port, request, barrier, ready, out):
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError as e:
        ready.release()
        out.append(("error", "connect: %s" % e))
        return
    ready.release()
    await barrier.wait()
    sent = time.perf_counter()
    first = None
    try:
        writer.write(request)
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        status = head.split(b" ", 2)[1]
        if status != b"200":
            body = await reader.read(2000)
            out.append(("error", "HTTP %s %s" % (status.decode(), body[:200])))
            return
        seen = b""
        while True:
            data = await reader.read(65536)
            if not data:
                out.append(("error", "closed before [DONE]"))
                return
            if first is None and b"data:" in data:
                first = time.perf_counter()
            seen = (seen + data)[-64:]
            if b"data: [DONE]" in seen:
                break
        out.append(("ok", (first - sent) * 1000.0, (time.perf_counter() - sent) * 1000.0))
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as e:
        out.append(("error", repr(e)))
    finally:
        writer.close()


async def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    chat = "--chat" in sys.argv
    url, path, n = args[0], args[1], int(args[2])
    max_tokens = int(args[3]) if len(args) > 3 else 16
    u = urlparse(url)
    host, port = u.hostname, u.port or 80
    if chat:
        body = {"model": "affinity-sim", "messages": [{"role": "user", "content": "Tell me a story about a fox"}],
                "max_tokens": max_tokens, "stream": True}
    else:
        body = {"model": "affinity-sim", "prompt": "Tell me a story about a fox", "max_tokens": max_tokens,
                "stream": True}
    payload = json.dumps(body).encode()
    request = (("POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\nConnection: close\r\n"
                "Content-Length: %d\r\n\r\n") % (path, host, port, len(payload))).encode() + payload
    barrier = asyncio.Event()
    ready = asyncio.Semaphore(0)
    out = []
    t0 = time.perf_counter()
    tasks = [asyncio.create_task(stream(host, port, request, barrier, ready, out)) for _ in range(n)]
    for _ in range(n):
        await ready.acquire()
    connected = time.perf_counter()
    barrier.set()
    await asyncio.gather(*tasks)
    done = time.perf_counter()
    ok = [r for r in out if r[0] == "ok"]
    errors = [r[1] for r in out if r[0] == "error"]
    ttft = [r[1] for r in ok]
    total = [r[2] for r in ok]
    print(json.dumps({
        "streams": n, "completed": len(ok), "failed": len(errors),
        "connect_ms": round((connected - t0) * 1000.0, 1), "run_ms": round((done - connected) * 1000.0, 1),
        "ttft_ms": {"p50": percentile(ttft, 50), "p90": percentile(ttft, 90), "p99": percentile(ttft, 99),
                    "max": max(ttft) if ttft else None},
        "total_ms": {"p50": percentile(total, 50), "p99": percentile(total, 99)},
        "errors": errors[:5]}))


if __name__ == "__main__":
    asyncio.run(main())
