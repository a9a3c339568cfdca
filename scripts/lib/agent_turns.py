#!/usr/bin/env python3
"""Agent turns through one frontend: the frontend's CPU per turn against the history an agent re-sends.

Usage: agent_turns.py URL FRONTEND_PID [HISTORIES] [TURNS] [WARMUP] [FRESH] [HOT]

An agent turn is a chat that re-sends its whole history (a system prompt with tools, then user / assistant /
tool-result turns, as a Claude Code session does) with one new user message. For each history length (tokens, as the
frontend's usage reports them) the client sends WARMUP turns of JIT warm-up first (once, on a 16k history), then the
history's first sight and HOT (10) turns at its length, unmeasured (the JIT compiles again for larger sizes), then TURNS
turns that share the history and differ in the last message, and reads the frontend's CPU (utime + stime from
/proc/PID/stat) before and after: the CPU per turn. "First sight" sends FRESH histories of the largest length, each
never seen before (its own words), one at a time. One request at a time (the client's own cost is not counted).
A sub-agent's first turn (TURNS of them, after HOT unmeasured) is a new session that forks the largest history's
agent (its history and a task, with the agent's session in X-Dynamo-Parent-Session-ID).
The turns go over one kept-alive connection, as an agent's SDK client sends them (KEEP_ALIVE=0: a new connection
for each). Prints one RESULT line per measurement. API=messages sends the turns to /v1/messages (Anthropic's Messages API, as
Claude Code does) instead of /v1/chat/completions.
"""
import http.client
import json
import os
import random
import sys
import time
import urllib.parse
import urllib.request

URL = sys.argv[1].rstrip("/")
PID = int(sys.argv[2])
HISTORIES = [int(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "10000,50000,100000,200000").split(",")]
TURNS = int(sys.argv[4]) if len(sys.argv) > 4 else 20
WARMUP = int(sys.argv[5]) if len(sys.argv) > 5 else 150
FRESH = int(sys.argv[6]) if len(sys.argv) > 6 else 5
HOT = int(sys.argv[7]) if len(sys.argv) > 7 else 10
# KEEP_ALIVE=1 (the default): the turns go over one kept-alive connection, as an agent's SDK client sends them; 0: a
# new connection for each turn (the script's behaviour before 2026-12-07, late)
KEEP_ALIVE = os.environ.get("KEEP_ALIVE", "1") != "0"
API = os.environ.get("API", "chat")  # chat: /v1/chat/completions; messages: /v1/messages
# tokens one turn adds (a user and an assistant message): 3000 by default; the Claude Code traces' median is 855
TURN_TOKENS = int(os.environ.get("TURN_TOKENS", "3000"))
TICK = os.sysconf("SC_CLK_TCK")

WORDS = ("the of and to in is for on that with as it be by this are from or at an file line function return value "
         "error test build module class method import string list map index block cache token worker request route "
         "prefix context generation session agent tool result output input path config server client stream").split()


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def thread_cpu(pid):
    """CPU seconds per thread group of the process (thread names with their numbers stripped), and under
    "NAME (kernel)" the part spent in the kernel (system calls: the bodies' reads and writes)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip().rstrip("0123456789#-_ ")
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[name] = out.get(name, 0) + (int(fields[11]) + int(fields[12])) / TICK
        out[name + " (kernel)"] = out.get(name + " (kernel)", 0) + int(fields[12]) / TICK
    return out


def text(rng, tokens):
    # about one token per word with its space on Qwen3's vocabulary; a newline every dozen words
    out = []
    for i in range(tokens):
        out.append(rng.choice(WORDS))
        out.append("\n" if i % 12 == 11 else " ")
    return "".join(out)


def history(seed, tokens):
    rng = random.Random(seed)
    messages = [{"role": "system", "content": "You are a coding agent. Tools: read_file, write_file, run.\n"
                 + text(rng, 2000)}]
    total = 2000
    turn = 0
    while total < tokens:
        n = min(TURN_TOKENS, tokens - total)
        messages.append({"role": "user", "content": f"step {turn}: " + text(rng, n // 3)})
        messages.append({"role": "assistant", "content": text(rng, n - n // 3)})
        total += n
        turn += 1
    return messages


def post(messages):
    if API == "messages":  # Anthropic's Messages API, as Claude Code sends its turns: the system prompt on its own
        body = json.dumps({"model": MODEL, "system": messages[0]["content"], "messages": messages[1:],
                           "max_tokens": 1}).encode()
        path, usage = "/v1/messages", None
    else:
        body = json.dumps({"model": MODEL, "messages": messages, "max_tokens": 1}).encode()
        path, usage = "/v1/chat/completions", "prompt_tokens"
    headers = {"content-type": "application/json", "x-session-id": SESSION}
    if PARENT:
        headers["x-dynamo-parent-session-id"] = PARENT
    if KEEP_ALIVE:
        answer = json.loads(send(path, body, headers))
    else:
        req = urllib.request.Request(URL + path, data=body, headers=headers)
        with urllib.request.urlopen(req, timeout=600) as r:
            answer = json.loads(r.read())
    u = answer["usage"]
    if usage is None:  # Anthropic's input_tokens leave out what was read from or written to the cache
        return (u["input_tokens"] + (u.get("cache_read_input_tokens") or 0)
                + (u.get("cache_creation_input_tokens") or 0)), len(body)
    return u[usage], len(body)


LAST_THREADS = {}
CONNECTION = None


def send(path, body, headers):
    """POST on one kept-alive connection, as an agent's SDK client sends its turns (a new one if the frontend closed
    it); the answer's body."""
    global CONNECTION
    for attempt in (0, 1):
        if CONNECTION is None:
            u = urllib.parse.urlsplit(URL)
            CONNECTION = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
        try:
            CONNECTION.request("POST", path, body=body, headers=headers)
            r = CONNECTION.getresponse()
            data = r.read()
            if r.status != 200:
                raise RuntimeError(f"HTTP {r.status}: {data[:200]!r}")
            if r.getheader("connection", "").lower() == "close":
                CONNECTION.close()
                CONNECTION = None
            return data
        except (http.client.RemoteDisconnected, ConnectionError, http.client.CannotSendRequest):
            CONNECTION.close()
            CONNECTION = None
            if attempt:
                raise


def mark(phase):
    """The wall-clock time a measured phase starts or ends, to match a profile (FRONTEND_JAVA_OPTS) against it."""
    print(f"MARK {phase} {time.strftime('%H:%M:%S')}", flush=True)


def turns(messages, n, tag):
    global LAST_THREADS
    prompt = size = 0
    before = thread_cpu(PID)
    t0 = cpu_seconds(PID)
    w0 = time.monotonic()
    for i in range(n):
        prompt, size = post(messages + [{"role": "user", "content": f"{tag} question {i}: what next?"}])
    after = thread_cpu(PID)
    LAST_THREADS = {k: (after.get(k, 0) - before.get(k, 0)) / n for k in after}
    return (cpu_seconds(PID) - t0) / n, (time.monotonic() - w0) / n, prompt, size


with urllib.request.urlopen(URL + "/v1/models", timeout=30) as r:
    MODEL = json.loads(r.read())["data"][0]["id"]
SESSION = "warm-up"
PARENT = None
warm = history(1, 16000)
turns(warm, WARMUP, "warm-up")
for h in HISTORIES:
    SESSION = f"agent-{h}"
    cpu, wall, prompt, size = turns(history(h, h), 1, "first")  # the history's first sight, not counted below
    turns(history(h, h), HOT, "hot")  # turns at this length before the measured ones: the JIT's code for its sizes
    mark(f"turns {h}")
    cpu, wall, prompt, size = turns(history(h, h), TURNS, "turn")
    mark("end")
    print(f"RESULT turn history_tokens={prompt} body_bytes={size} cpu_ms={cpu * 1000:.2f} wall_ms={wall * 1000:.2f}",
          flush=True)
    top = sorted(((k, v) for k, v in LAST_THREADS.items() if not k.endswith(" (kernel)")), key=lambda kv: -kv[1])[:6]
    print("  per turn by thread (of it in the kernel): " + ", ".join(
        f"{k} {v * 1000:.1f} ms ({LAST_THREADS.get(k + ' (kernel)', 0) * 1000:.1f})" for k, v in top if v > 0), flush=True)
biggest = HISTORIES[-1]


def subagent_first_turns(messages, n, tag):
    """n sub-agents' first turns, each a new session forking its parent's (the parent's history and a task)."""
    global SESSION, LAST_THREADS
    before = thread_cpu(PID)
    t0 = cpu_seconds(PID)
    for i in range(n):
        SESSION = f"{tag}-{i}"
        prompt, size = post(messages + [{"role": "user", "content": f"{tag} {i}: a task for a sub-agent"}])
    after = thread_cpu(PID)
    LAST_THREADS = {k: (after.get(k, 0) - before.get(k, 0)) / n for k in after}
    return (cpu_seconds(PID) - t0) / n, prompt


# a sub-agent's first turn (its parent's session in X-Dynamo-Parent-Session-ID): it re-sends its parent's history
PARENT = f"agent-{biggest}"
subagent_first_turns(history(biggest, biggest), HOT, "sub-hot")
mark("sub-agent first turns")
cpu, prompt = subagent_first_turns(history(biggest, biggest), TURNS, "sub")
mark("end")
print(f"RESULT subagent_first_turn history_tokens={prompt} cpu_ms={cpu * 1000:.2f}", flush=True)
top = sorted(((k, v) for k, v in LAST_THREADS.items() if not k.endswith(" (kernel)")), key=lambda kv: -kv[1])[:6]
print("  per turn by thread: " + ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in top if v > 0), flush=True)
PARENT = None
cpus = []
mark("first sights")
for k in range(FRESH):
    SESSION = f"fresh-{k}"
    cpu, wall, prompt, size = turns(history(1000 + k, biggest), 1, "fresh")
    cpus.append(cpu)
    top = sorted(((k, v) for k, v in LAST_THREADS.items() if not k.endswith(" (kernel)")), key=lambda kv: -kv[1])[:4]
    print(f"  first sight {k}: {cpu * 1000:.0f} ms, by thread: "
          + ", ".join(f"{n} {v * 1000:.0f} ms" for n, v in top if v > 0), flush=True)
mark("end")
cpus.sort()
print(f"RESULT first_sight history_tokens={prompt} cpu_ms={cpus[len(cpus) // 2] * 1000:.2f} "
      f"runs={','.join(f'{c * 1000:.0f}' for c in cpus)}", flush=True)
# what the kept prompts cost: the frontend's own account (affinity_prompt_prefix_*), absent on builds without them
with urllib.request.urlopen(URL + "/metrics", timeout=30) as r:
    metrics = {}
    for line in r.read().decode().splitlines():
        if line.startswith(("affinity_prompt_prefix_", "affinity_kept_turn_")) and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            metrics[name] = float(value)
entries = metrics.get("affinity_prompt_prefix_entries", 0)
reused = metrics.get('affinity_prompt_prefix_tokens_total{source="reused"}', 0)
encoded = metrics.get('affinity_prompt_prefix_tokens_total{source="encoded"}', 0)
iterations_reused = metrics.get('affinity_prompt_prefix_template_iterations_total{source="reused"}', 0)
iterations_rendered = metrics.get('affinity_prompt_prefix_template_iterations_total{source="rendered"}', 0)
if entries:
    print(f"RESULT prompt_prefixes entries={entries:.0f} bytes={metrics.get('affinity_prompt_prefix_bytes', 0):.0f} "
          f"bytes_per_entry={metrics.get('affinity_prompt_prefix_bytes', 0) / entries:.0f} "
          f"reused_tokens={reused:.0f} encoded_tokens={encoded:.0f} template_iterations_reused={iterations_reused:.0f} "
          f"template_iterations_rendered={iterations_rendered:.0f}", flush=True)
# what the kept turns cost (affinity_kept_turn_*: the chat bodies and legs' ids kept per conversation)
turns_kept = metrics.get("affinity_kept_turn_entries", 0)
if turns_kept:
    kept = [metrics.get("affinity_kept_turn_" + k, 0) for k in (
        "bytes", 'bodies_total{result="reused"}', 'bodies_total{result="whole"}', 'body_bytes_total{source="reused"}',
        'body_bytes_total{source="read"}', "followed_ids_total")]
    print(f"RESULT kept_turns entries={turns_kept:.0f} bytes={kept[0]:.0f} bytes_per_entry={kept[0] / turns_kept:.0f} "
          f"bodies_reused={kept[1]:.0f} bodies_whole={kept[2]:.0f} body_bytes_reused={kept[3]:.0f} "
          f"body_bytes_read={kept[4]:.0f} ids_followed={kept[5]:.0f}", flush=True)
