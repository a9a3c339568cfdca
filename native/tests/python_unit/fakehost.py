"""A stand-in for the _affinity_host built-in module that libaffinity_pyhost.so registers: records
what driver.py hands to the executor, so that the driver's Python can be tested on its own."""
import sys
import types

emitted = []    # (engine, request_id, tokens, finish, is_final, error, kind, ctx, reused, rank, rank_source)
kv_events = []  # (engine, [event tuple])
stats = []      # (engine, stats tuple)
rejected = []   # (engine, stream, n)


def reset():
    for lst in (emitted, kv_events, stats, rejected):
        lst.clear()


def _emit(*args):
    if len(args) != 11:
        raise TypeError("emit takes 11 arguments, got %d" % len(args))
    emitted.append(args)


def install():
    m = types.ModuleType("_affinity_host")
    m.emit = _emit
    m.kv_events = lambda engine, events: kv_events.append((engine, list(events)))
    m.stats = lambda engine, row: stats.append((engine, row))
    m.rejected = lambda engine, stream, n: rejected.append((engine, stream, n))
    sys.modules["_affinity_host"] = m


install()
