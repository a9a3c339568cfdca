# The Python half of Affinity's "pytorch" backend. libaffinity_pyhost.so compiles this file into the
# embedded interpreter (module "affinity_pyhost_driver") and runs Host.run() on its one host thread.
#
# Java threads never run Python: they queue commands in C++ and write an eventfd; the loop wakes,
# drains the commands through the built-in module _affinity_host, and starts one asyncio task per
# request around tensorrt_llm.LLM.generate_async. Results go back through _affinity_host.emit, which
# hands them to the executor's response queue in C++. Every accepted request gets exactly one final
# response, also when it is cancelled before its task starts or when its engine shuts down.
import asyncio
import base64
import dataclasses
import datetime
import json
import logging
import os
import time
import traceback

import _affinity_host as host

log = logging.getLogger("affinity.pyhost")

CREATE, SUBMIT, CANCEL, DESTROY, STOP, CALL = range(6)
TOKENIZE, TOKENIZE_CHAT, DETOKENIZE = range(3)
# The facade's FinishReason codes.
NOT_FINISHED, END_ID, STOP_WORDS, LENGTH, CANCELLED, ERROR = range(6)
# The facade's ErrorKind codes (types.h): how an ERROR / CANCELLED response is classified.
NO_ERROR, BAD_REQUEST, CONTEXT_NOT_FOUND, CAPACITY, CANCELLED_KIND, BACKEND_FAILURE = range(6)
# The facade's RankSource codes (types.h): where a response's rank comes from.
RANK_FROM_EXECUTOR, RANK_FROM_HINT, RANK_FROM_KV_EVENTS, RANK_ONLY_ONE = range(4)
REQUEST_TYPES = ("context_and_generation", "context_only", "generation_only")
CONTEXT_AND_GENERATION, CONTEXT_ONLY, GENERATION_ONLY = range(3)


def _error_kind(code):
    """The error kind a final response with this finish code has unless it is classified otherwise."""
    return CANCELLED_KIND if code == CANCELLED else BACKEND_FAILURE if code == ERROR else NO_ERROR


def _finish_code(output):
    reason = getattr(output, "finish_reason", None)
    if reason in ("length", "timeout"):  # timeout: the request's allotted time ran out
        return LENGTH
    if reason == "not_finished":
        # A context_only request whose context is complete (TensorRT-LLM's NOT_FINISHED): the facade's
        # context-complete state is LENGTH with the context phase params, as the CPU executor reports it.
        return LENGTH
    if reason == "stop":
        return STOP_WORDS if getattr(output, "stop_reason", None) is not None else END_ID
    if reason in ("cancelled", "abort", "aborted"):
        return CANCELLED
    return END_ID


def _with_known_fields(cls, kwargs):
    """Keeps the keyword arguments that the dataclass accepts (older releases lack newer fields)."""
    if dataclasses.is_dataclass(cls):
        names = {f.name for f in dataclasses.fields(cls)}
        return {k: v for k, v in kwargs.items() if k in names}
    return kwargs


# -- the context state: every DisaggregatedParams field, through the facade's opaque bytes ------------
#
# The facade carries four context phase fields (ctx_request_id, ctx_dp_rank, first_gen_tokens and the
# opaque state). TensorRT-LLM's Python KV-transfer path also needs ctx_info_endpoint and
# disagg_request_id on the generation request, and releases may add more. Whatever else the context
# output's DisaggregatedParams holds travels inside the opaque bytes: a marker, then JSON with the
# LLM's own opaque state (base64) and the other fields. Without such fields the LLM's opaque state is
# passed as it is, byte for byte.

_STATE_MARK = b"\x00affinity-disagg-state:1\n"
_NATIVE_FIELDS = frozenset(("request_type", "ctx_request_id", "ctx_dp_rank", "first_gen_tokens", "opaque_state"))


def _plain(value):
    """A field value as JSON, or raises TypeError (tensors and other objects do not travel)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if isinstance(value, bytes):
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _plain(v) for k, v in value.items()}
    raise TypeError("a %s cannot travel in the context state" % type(value).__name__)


def _unplain(value):
    if isinstance(value, list):
        return [_unplain(v) for v in value]
    if isinstance(value, dict):
        if set(value) == {"$bytes"}:
            return base64.b64decode(value["$bytes"])
        return {k: _unplain(v) for k, v in value.items()}
    return value


def pack_context_state(dp):
    """The facade's opaque bytes for the context output's DisaggregatedParams dp."""
    opaque = bytes(getattr(dp, "opaque_state", None) or b"")
    names = [f.name for f in dataclasses.fields(dp)] if dataclasses.is_dataclass(dp) else []
    extra = {}
    for name in names:
        value = getattr(dp, name, None)
        if name in _NATIVE_FIELDS or value is None:
            continue
        try:
            extra[name] = _plain(value)
        except TypeError as e:
            log.warning("context output: disaggregated_params.%s is left out of the context state: %s", name, e)
    if not extra:
        return opaque
    doc = {"opaque_state": base64.b64encode(opaque).decode("ascii") if getattr(dp, "opaque_state", None) is not None
           else None, "fields": extra}
    return _STATE_MARK + json.dumps(doc, sort_keys=True).encode("utf-8")


def unpack_context_state(state):
    """(opaque_state or None, {field: value}) from the facade's opaque bytes."""
    if not state.startswith(_STATE_MARK):
        return (state or None), {}
    doc = json.loads(state[len(_STATE_MARK):].decode("utf-8"))
    opaque = doc.get("opaque_state")
    return (None if opaque is None else base64.b64decode(opaque)), {k: _unplain(v) for k, v in doc["fields"].items()}


# -- KV events -----------------------------------------------------------------------------------------

def _block_key(h):
    """A block hash as the 64-bit key Java's index uses: ints as they are, SHA-256 hex by its first 8 bytes."""
    if isinstance(h, str):
        return int(h[:16], 16) if len(h) == 64 else int(h)
    if isinstance(h, bool) or not isinstance(h, int):
        raise TypeError("a block hash must be an int or a hex string, got %s" % type(h).__name__)
    return h


def _kv_event(ev, default_rank):
    """One KV event (a dict as TensorRT-LLM serializes it) as the tuple _affinity_host.kv_events reads;
    None for kinds the facade does not know. Raises on an item of another shape."""
    if isinstance(ev, str):
        ev = json.loads(ev)
    if not isinstance(ev, dict):
        raise TypeError("a KV event must be a mapping, got %s" % type(ev).__name__)
    data = ev.get("data") or {}
    kind = data.get("type")
    rank = ev.get("attention_dp_rank")  # only set with attention DP
    rank = default_rank if rank is None else int(rank)
    window = int(ev.get("window_size") or 0)
    eid = int(ev.get("event_id") or 0)
    if kind == "created":
        return (eid, 0, rank, window, None, [], [], sum(int(n) for n in data.get("num_blocks_per_cache_level") or []), 0)
    if kind == "stored":
        hashes, tokens = [], []
        for b in data.get("blocks") or []:
            hashes.append(_block_key(b["block_hash"]))
            tokens.extend(int(t["token_id"]) if isinstance(t, dict) else int(t) for t in b.get("tokens") or [])
        parent = data.get("parent_hash")
        return (eid, 1, rank, window, None if parent is None else _block_key(parent), hashes, tokens, 0, 0)
    if kind == "removed":
        return (eid, 2, rank, window, None, [_block_key(h) for h in data.get("block_hashes") or []], [], 0, 0)
    if kind == "updated":
        prio = data.get("priority")
        value = prio.get("new_value") if isinstance(prio, dict) else prio
        level = data.get("cache_level")
        level = level.get("new_value") if isinstance(level, dict) else level
        return (eid, 3, rank, window, None, [_block_key(data["block_hash"])], [], int(value or 0), int(level or 0))
    return None


class BlockIndex:
    """Which attention-DP rank holds which prompt blocks, from the stored / removed KV events: the rank
    of a request whose output does not say (releases without ctx_dp_rank) is the one whose blocks are
    its prompt. Blocks are keyed by their parent and a hash of their tokens (Python's tuple hash of ints,
    which no hash seed changes), so no KV-cache hash algorithm is needed; the oldest blocks beyond
    max_blocks_per_rank are forgotten."""

    def __init__(self, num_ranks, max_blocks_per_rank=1 << 18):
        self.num_ranks = num_ranks
        self.max_blocks = max_blocks_per_rank
        self.by_content = [dict() for _ in range(num_ranks)]  # (parent, hash of tokens) -> block
        self.by_block = [dict() for _ in range(num_ranks)]    # block -> ((parent, hash of tokens), sequence)
        self.sequence = 0  # counts stored blocks: a request's own blocks are newer than its submission

    def apply(self, event):
        """Takes one converted KV event (the tuple of _kv_event)."""
        _, kind, rank, _, parent, hashes, tokens, _, _ = event
        if not 0 <= rank < self.num_ranks:
            return
        if kind == 1 and hashes and tokens and len(tokens) % len(hashes) == 0:
            per = len(tokens) // len(hashes)
            for i, block in enumerate(hashes):
                self._store(rank, parent, hash(tuple(tokens[i * per:(i + 1) * per])), block)
                parent = block
        elif kind == 2:
            for block in hashes:
                self._drop(rank, block)

    def _store(self, rank, parent, tokens, block):
        self._drop(rank, block)
        self.sequence += 1
        key = (parent, tokens)
        self.by_content[rank][key] = block
        self.by_block[rank][block] = (key, self.sequence)
        if len(self.by_block[rank]) > self.max_blocks:
            self._drop(rank, next(iter(self.by_block[rank])))

    def _drop(self, rank, block):
        old = self.by_block[rank].pop(block, None)
        if old is not None and self.by_content[rank].get(old[0]) == block:
            del self.by_content[rank][old[0]]

    @staticmethod
    def blocks_needed(prompt_len, tokens_per_block):
        """The full blocks of a prompt that its rank must hold (the last token's block may be left out)."""
        need = (prompt_len - 1) // tokens_per_block
        return need if need > 0 else prompt_len // tokens_per_block

    def rank_of(self, prompt, tokens_per_block, cached, since, final):
        """The rank holding the prompt's blocks, or -1 while that is not clear. A request that stored
        blocks (cached < its blocks) needs a rank with blocks stored after `since` (its submission);
        with final=True a single rank holding the whole prompt is enough."""
        need = self.blocks_needed(len(prompt), tokens_per_block)
        if need <= 0:
            return -1
        holders, fresh = [], []
        for rank in range(self.num_ranks):
            parent, newest = None, 0
            for b in range(need):
                tokens = tuple(prompt[b * tokens_per_block:(b + 1) * tokens_per_block])
                block = self.by_content[rank].get((parent, hash(tokens)))
                if block is None:
                    break
                newest = max(newest, self.by_block[rank][block][1])
                parent = block
            else:
                holders.append(rank)
                if newest > since:
                    fresh.append(rank)
        stored_new = cached < 0 or cached < need * tokens_per_block
        candidates = fresh if stored_new else holders
        if len(candidates) == 1:
            return candidates[0]
        if final and len(holders) == 1:
            return holders[0]
        return -1


# -- iteration statistics ------------------------------------------------------------------------------

def _stats_tuple(st):
    """One iteration-stats row as the tuple _affinity_host.stats reads. With attention DP TensorRT-LLM
    sends a row per rank that copies numActiveRequests and kvCacheStats from one base row (rank 0's);
    only inflightBatchingStats is the rank's own (older releases send rank 0's row alone). A rank's
    load is therefore its scheduled and paused requests from inflightBatchingStats, and so are the
    context tokens it computed in the iteration (numCtxTokens); the KV-cache figures count for rank 0
    only. Raises on a row of another shape."""
    if isinstance(st, str):
        st = json.loads(st)
    if not isinstance(st, dict):
        raise TypeError("a statistics row must be a mapping, got %s" % type(st).__name__)
    ifb = st.get("inflightBatchingStats") or {}
    rank = int(st.get("attentionDpRank") or 0)
    kv = (st.get("kvCacheStats") or {}) if rank == 0 else {}
    parts = [ifb.get(k) for k in ("numContextRequests", "numGenRequests", "numPausedRequests")]
    load = -1 if parts[0] is None or parts[1] is None else int(parts[0]) + int(parts[1]) + int(parts[2] or 0)
    row = (rank, load) + tuple(
        int(kv.get(k, -1)) for k in ("maxNumBlocks", "freeNumBlocks", "usedNumBlocks", "tokensPerBlock",
                                     "allocTotalBlocks", "allocNewBlocks", "reusedBlocks", "missedBlocks")
    ) + (float(kv.get("cacheHitRate", -1)), int(ifb.get("numCtxTokens", -1)))
    queued = int(st.get("numQueuedRequests", -1)) if rank == 0 else -1  # only rank 0 reports the queue
    return (int(st.get("iter", -1)), float(st.get("iterLatencyMS", -1)), int(ifb.get("numContextRequests", -1)),
            int(ifb.get("numGenRequests", -1)), int(ifb.get("numCtxTokens", -1)), queued, [row])


class RejectLog:
    """Logs items of an unexpected shape without flooding: the first few with their reason, then every
    thousandth, with the count."""

    def __init__(self, what, first=5, every=1000):
        self.what, self.first, self.every, self.count = what, first, every, 0

    def reject(self, engine_id, item, error):
        self.count += 1
        if self.count <= self.first or self.count % self.every == 0:
            log.warning("engine %d: skipped %s item #%d of an unexpected shape (%s: %s): %.200r",
                        engine_id, self.what, self.count, type(error).__name__, error, item)


class Engine:
    """One tensorrt_llm.LLM and the requests running on it."""

    def __init__(self, engine_id, config, loop):
        self.id = engine_id
        self.loop = loop
        import tensorrt_llm
        self.trtllm = tensorrt_llm
        self.SamplingParams = tensorrt_llm.SamplingParams
        self.DisaggregatedParams = tensorrt_llm.DisaggregatedParams
        # SchedulingParams and ConversationParams are exported by tensorrt_llm.llmapi, not the top level.
        from tensorrt_llm.llmapi import ConversationParams, SchedulingParams
        self.SchedulingParams = SchedulingParams
        self.ConversationParams = ConversationParams
        self.subagent_affinity = (not dataclasses.is_dataclass(SchedulingParams)
                                  or "subagent_affinity_id" in {f.name for f in dataclasses.fields(SchedulingParams)})
        # KvCacheRetentionConfig is the bindings' class (cpp/tensorrt_llm/executor/kvCacheRetentionConfig.cpp),
        # which tensorrt_llm.llmapi re-exports; without it a request's retention is dropped (logged once).
        try:
            from tensorrt_llm.llmapi import KvCacheRetentionConfig
        except ImportError:
            KvCacheRetentionConfig = None
        self.KvCacheRetentionConfig = KvCacheRetentionConfig
        self.retention_dropped = False
        llm_args = dict(config.get("llm_args") or {})
        events = config.get("kv_events") or {}
        stats_ms = config.get("stats_poll_interval_ms", 0)
        if stats_ms > 0:
            llm_args.setdefault("enable_iter_perf_stats", True)  # get_stats_async yields nothing without it
        if events.get("enabled"):
            kv = llm_args.setdefault("kv_cache_config", {})
            if isinstance(kv, dict):
                kv.setdefault("event_buffer_max_size", 16384)  # no KV events without a buffer
        self.llm_args = llm_args
        self.num_ranks = int(config.get("num_ranks", 1))
        self.tokens_per_block = int(config.get("tokens_per_block", 32))
        # The rank of a request whose output does not name it, from the LLM's KV events.
        self.blocks = BlockIndex(self.num_ranks) if events.get("enabled") and self.num_ranks > 1 else None
        self.rank_wait_s = events.get("rank_wait_ms", 0) / 1000.0
        self.kv_round = asyncio.Event()  # set (and replaced) after every KV-event poll round
        self.kv_wake = asyncio.Event()   # ends the KV poller's pause early
        # The environment the LLM's worker processes start with (e.g. CUDA_VISIBLE_DEVICES to give
        # colocated context and generation LLMs their own GPUs); restored once the LLM is built.
        env = config.get("env") or {}
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            self.llm = tensorrt_llm.LLM(model=config["model"], **llm_args)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        self.live = {}      # request id -> asyncio task
        self.outputs = {}   # request id -> the RequestOutput being awaited (for abort)
        self.final_sent = set()
        self.closed = False  # set by close(): nothing is emitted afterwards
        self.polling = True
        self.pollers = []
        # Started with the first request: before it, the LLM has no event or statistics stream yet
        # (TensorRT-LLM asserts on it).
        self.poll_plan = []
        if events.get("enabled"):
            self.poll_plan.append((self._poll_kv_events, events["poll_interval_ms"] / 1000.0))
        if stats_ms > 0:
            self.poll_plan.append((self._poll_stats, stats_ms / 1000.0))

    def describe(self):
        return json.dumps({"tensorrt_llm_version": getattr(self.trtllm, "__version__", "unknown"),
                           "tensorrt_llm_path": getattr(self.trtllm, "__file__", None),
                           "subagent_affinity_supported": self.subagent_affinity,
                           "kv_cache_retention_supported": self.KvCacheRetentionConfig is not None,
                           "llm_args": self.llm_args}, default=str)

    # -- requests --------------------------------------------------------------------------------

    def submit(self, req):
        rid = req[0]
        task = self.loop.create_task(self._run(req))
        self.live[rid] = task
        # Also runs for a task cancelled before it started, whose coroutine never runs its except.
        task.add_done_callback(lambda t, rid=rid: self._task_done(rid, t))

    def _start_polling(self):
        """Starts the KV event and statistics pollers once the LLM has had its first request."""
        if self.poll_plan:
            self.pollers = [self.loop.create_task(fn(interval)) for fn, interval in self.poll_plan]
            self.poll_plan = []

    def _task_done(self, rid, task):
        if task.cancelled():
            self._final(rid, CANCELLED, "cancelled")
        elif task.exception() is not None:
            self._final(rid, ERROR, "".join(traceback.format_exception(task.exception())))
        self.live.pop(rid, None)
        self.outputs.pop(rid, None)
        self.final_sent.discard(rid)

    def cancel(self, rid):
        out = self.outputs.get(rid)
        if out is not None and hasattr(out, "abort"):
            try:
                out.abort()
            except Exception:  # the request may have finished meanwhile
                pass
        task = self.live.get(rid)
        if task is not None:
            task.cancel()

    def _final(self, rid, code, error=None, ctx=None, tokens=(), reused=-1, rank=-1, kind=None,
               source=RANK_FROM_EXECUTOR):
        """The request's one final response (later calls for the same request do nothing)."""
        if rid in self.final_sent or self.closed:
            return
        kind = _error_kind(code) if kind is None else kind
        try:
            host.emit(self.id, rid, tokens, code, True, error, kind, ctx, reused, rank, source)
        except Exception:  # e.g. a result the bridge cannot read: still end the request
            log.exception("engine %d: request %d: emitting its result failed", self.id, rid)
            host.emit(self.id, rid, (), ERROR, True, "the result could not be passed on (see the host log)",
                      BACKEND_FAILURE, None, -1, -1, RANK_FROM_EXECUTOR)
        self.final_sent.add(rid)

    def _params(self, req):
        (rid, max_new, rtype, streaming, end_id, seed, rank_hint, relax, priority, cache_salt, ctx_phase,
         tokens, stop_ids, conversation_id, subagent_id, retention) = req
        # Token ids in, token ids out: text is the frontend's business (detokenize=False spares the LLM's
        # own decoding).
        sampling = {"max_tokens": max_new, "detokenize": False}
        if end_id >= 0:
            sampling["end_id"] = end_id
        if stop_ids:
            sampling["stop_token_ids"] = list(stop_ids)
        if seed:
            sampling["seed"] = seed
        kwargs = {"sampling_params": self.SamplingParams(**sampling), "streaming": bool(streaming)}
        if rtype != CONTEXT_AND_GENERATION:
            dp = {"request_type": REQUEST_TYPES[rtype]}
            if ctx_phase is not None:
                ctx_id, ctx_rank, first_gen, state = ctx_phase
                opaque, fields = unpack_context_state(state)
                dp.update(fields)  # e.g. ctx_info_endpoint and disagg_request_id (the Python KV transfer)
                dp.update(ctx_request_id=ctx_id, first_gen_tokens=list(first_gen), opaque_state=opaque)
                if ctx_rank >= 0:
                    dp["ctx_dp_rank"] = ctx_rank
            kwargs["disaggregated_params"] = self.DisaggregatedParams(**_with_known_fields(self.DisaggregatedParams, dp))
        if rank_hint >= 0 or subagent_id:
            sp = {"attention_dp_rank": rank_hint if rank_hint >= 0 else None, "attention_dp_relax": bool(relax)}
            if subagent_id and self.subagent_affinity:  # releases before PR #18684 lack the field
                sp["subagent_affinity_id"] = subagent_id
            kwargs["scheduling_params"] = self.SchedulingParams(**sp)
        if conversation_id:
            kwargs["conversation_params"] = self.ConversationParams(conversation_id=conversation_id)
        if cache_salt is not None:
            kwargs["cache_salt"] = cache_salt
        if priority != 0.5:
            kwargs["priority"] = priority
        if retention is not None:
            config = self._retention(retention)
            if config is not None:
                kwargs["kv_cache_retention_config"] = config
        return list(tokens), kwargs

    def _retention(self, retention):
        """TensorRT-LLM's KvCacheRetentionConfig from the request's (ranges, decode_retention_priority,
        decode_duration_ms); None on a release without it. Durations are datetime.timedelta (the bindings
        take std::chrono::milliseconds), None for none."""
        cls = self.KvCacheRetentionConfig
        if cls is None:
            if not self.retention_dropped:
                self.retention_dropped = True
                log.warning("engine %d: this tensorrt_llm has no KvCacheRetentionConfig: requests' KV-cache "
                            "retention is dropped", self.id)
            return None

        def duration(ms):
            try:
                return None if ms is None else datetime.timedelta(milliseconds=ms)
            except OverflowError:  # beyond timedelta's 999999999 days: the LLM cannot take it
                raise ValueError("kv_cache_retention_config: a duration of %d ms is too long" % ms) from None

        ranges, decode_priority, decode_ms = retention
        return cls([cls.TokenRangeRetentionConfig(start, end, prio, duration(ms)) for start, end, prio, ms in ranges],
                   decode_retention_priority=decode_priority, decode_duration_ms=duration(decode_ms))

    @staticmethod
    def _context_phase(output):
        dp = getattr(output, "disaggregated_params", None)
        if dp is None:
            return None
        rank = getattr(dp, "ctx_dp_rank", None)
        return (int(dp.ctx_request_id or 0), -1 if rank is None else int(rank),
                list(dp.first_gen_tokens or []), pack_context_state(dp))

    @staticmethod
    def _visible(tokens, stops):
        """The output tokens the facade sees: never a trailing end id or stop token. TensorRT-LLM strips
        a stop token from the final output unless include_stop_str_in_output is set, keeps the end id in
        some releases, and a streamed chunk may end in the token that a later response strips: such a
        token is held back, so that it is neither emitted nor emitted twice."""
        n = len(tokens)
        if n and tokens[-1] in stops:
            n -= 1
        return tokens[:n]

    async def _served_rank(self, req, ctx, reused, since):
        """The rank that served the request and where that comes from: the LLM's ctx_dp_rank; else the
        rank it was pinned to (a hint that is not relaxed); else, for a request that prefilled its
        prompt, the rank whose KV events hold its blocks (waiting up to kv_events.rank_wait_ms for
        them); the only rank of a single-rank LLM; or unknown (-1)."""
        if ctx is not None and ctx[1] >= 0:
            return ctx[1], RANK_FROM_EXECUTOR
        rtype, rank_hint, relax, tokens = req[2], req[6], req[7], req[11]
        if rank_hint >= 0 and not relax:
            return rank_hint, RANK_FROM_HINT
        if rtype == GENERATION_ONLY:
            return -1, RANK_FROM_EXECUTOR
        if self.num_ranks == 1:
            return 0, RANK_ONLY_ONE
        if self.blocks is None:
            return -1, RANK_FROM_EXECUTOR
        rank = await self._rank_from_events(list(tokens), reused, since)
        return (rank, RANK_FROM_KV_EVENTS) if rank >= 0 else (-1, RANK_FROM_EXECUTOR)

    async def _rank_from_events(self, tokens, reused, since):
        if BlockIndex.blocks_needed(len(tokens), self.tokens_per_block) <= 0:
            return -1  # no full block: no event can tell
        deadline = self.loop.time() + self.rank_wait_s
        while True:
            rank = self.blocks.rank_of(tokens, self.tokens_per_block, reused, since, final=False)
            remaining = deadline - self.loop.time()
            if rank >= 0 or remaining <= 0 or not self.polling or not self.pollers:
                break
            round_done = self.kv_round
            self.kv_wake.set()  # the poller reads now rather than after its pause
            try:
                await asyncio.wait_for(round_done.wait(), remaining)
            except asyncio.TimeoutError:
                pass
        if rank < 0:
            rank = self.blocks.rank_of(tokens, self.tokens_per_block, reused, since, final=True)
        return rank

    async def _finish(self, rid, req, c, tokens, reused, since):
        ctx = self._context_phase(c)
        code = _finish_code(c)
        if code == CANCELLED:  # aborted: no rank to wait for
            rank, source = (ctx[1] if ctx is not None else -1), RANK_FROM_EXECUTOR
        else:
            rank, source = await self._served_rank(req, ctx, reused, since)
        self._final(rid, code, None, ctx, tokens, reused, rank, source=source)

    @staticmethod
    def _reused(result, previous):
        """The prompt tokens served from cache: TensorRT-LLM updates cached_tokens on every response, and
        the value on the last one is the request's."""
        cached = getattr(result, "cached_tokens", None)
        return previous if cached is None else int(cached)

    async def _run(self, req):
        rid, rtype, streaming, end_id, stop_ids = req[0], req[2], req[3], req[4], req[12]
        stops = set(stop_ids) | ({end_id} if end_id >= 0 else set())
        since = self.blocks.sequence if self.blocks is not None else 0
        try:
            try:
                tokens, kwargs = self._params(req)
                result = self.llm.generate_async(tokens, **kwargs)
            except (ValueError, TypeError):
                # The LLM refused the request's arguments (e.g. a prompt longer than max_seq_len).
                self._final(rid, ERROR, traceback.format_exc(), kind=BAD_REQUEST)
                return
            self.outputs[rid] = result
            self._start_polling()
            reused = -1
            if streaming:
                # New tokens by our own count, not token_ids_diff: for a streamed generation_only
                # request TensorRT-LLM leaves the first token (the context server's) out of the diff,
                # and the facade's generation responses start with it.
                sent = 0
                async for out in result:
                    c = out.outputs[0]
                    reused = self._reused(out, reused)
                    visible = self._visible(list(c.token_ids), stops)
                    new, sent = visible[sent:], max(sent, len(visible))
                    if out.finished:
                        await self._finish(rid, req, c, new, reused, since)
                    elif new and not self.closed:
                        host.emit(self.id, rid, new, NOT_FINISHED, False, None, NO_ERROR, None, -1, -1,
                                  RANK_FROM_EXECUTOR)
                if rid not in self.final_sent:
                    self._final(rid, END_ID)
            else:
                out = await result
                c = out.outputs[0]
                await self._finish(rid, req, c, self._visible(list(c.token_ids), stops), self._reused(out, reused),
                                   since)
        except asyncio.CancelledError:
            self._final(rid, CANCELLED, "cancelled")
        except BaseException:
            self._final(rid, ERROR, traceback.format_exc())

    # -- tokenizer -------------------------------------------------------------------------------

    def call(self, op, text, tokens):
        """The LLM's own tokenizer: (error, text, tokens)."""
        tok = getattr(self.llm, "tokenizer", None)
        if tok is None:
            return "the LLM has no tokenizer (was it built with skip_tokenizer_init?)", None, None
        if op == TOKENIZE:
            return None, None, [int(t) for t in tok.encode(text)]
        if op == TOKENIZE_CHAT:
            template = getattr(tok, "apply_chat_template", None) or tok.tokenizer.apply_chat_template
            ids = template(json.loads(text), tokenize=True, add_generation_prompt=True)
            if isinstance(ids, dict) or hasattr(ids, "keys"):  # newer transformers return a BatchEncoding
                ids = ids["input_ids"]
            return None, None, [int(t) for t in ids]
        if op == DETOKENIZE:
            return None, tok.decode(list(tokens), skip_special_tokens=True), None
        return "unknown tokenizer operation %d" % op, None, None

    # -- KV events and statistics -----------------------------------------------------------------

    @staticmethod
    def _stream(result):
        """TensorRT-LLM hands out one long-lived result per stream, which stays "done" after a
        timeout until the next request is submitted; reopen it so that events of a finished
        request arrive before the next one (a sub-agent after its parent)."""
        if hasattr(result, "mark_undone"):
            result.mark_undone()
        return result

    # Polling loops test self.polling instead of relying on cancellation alone: before Python 3.12,
    # asyncio.wait_for (which the LLM's result iterators use) can swallow a cancellation that
    # arrives as an item does, and the loop would poll forever.

    async def _poll(self, open_stream, deliver, interval, what, wake=None, after_round=None):
        """Reads one of the LLM's streams in rounds of at most `interval` seconds (a round also ends
        once nothing came within the timeout) and hands each round's items to deliver, so a busy
        stream is delivered at least every interval. Nothing ends the loop but shutdown: a failed
        read or delivery is logged and the next round starts (deliver handles items one by one).
        Setting `wake` ends the pause between rounds early; after_round runs after every round."""
        while self.polling:
            items = []
            started = time.monotonic()
            try:
                async for item in self._stream(open_stream(interval)):
                    items.append(item)
                    if time.monotonic() - started >= interval:
                        break
            except IndexError:  # the LLM's way of saying "nothing more now"
                pass
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("engine %d: reading %s failed", self.id, what)
            try:
                if items and not self.closed:
                    deliver(items)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("engine %d: delivering %s failed", self.id, what)
            if after_round is not None:
                after_round()
            elapsed = time.monotonic() - started
            if elapsed >= interval:
                continue
            if wake is None:
                await asyncio.sleep(interval - elapsed)
                continue
            try:
                await asyncio.wait_for(wake.wait(), interval - elapsed)
            except asyncio.TimeoutError:
                pass
            wake.clear()

    def _rejected(self, stream, rejects, item, error):
        """An item of an unexpected shape: logged (sparingly), counted by the executor, skipped."""
        rejects.reject(self.id, item, error)
        try:
            host.rejected(self.id, stream, 1)
        except Exception:
            log.exception("engine %d: counting a skipped %s item failed", self.id, rejects.what)

    def _kv_round_done(self):
        """Wakes whoever waits for KV events (a request's rank): one round was read and delivered."""
        done, self.kv_round = self.kv_round, asyncio.Event()
        done.set()

    async def _poll_kv_events(self, interval):
        rejects = RejectLog("KV event")

        def deliver(events):
            batch = []
            for ev in events:
                try:
                    converted = _kv_event(ev, 0)
                except Exception as e:  # one malformed event must not stop the stream
                    self._rejected("kv_events", rejects, ev, e)
                    continue
                if converted is not None:
                    batch.append(converted)
                    if self.blocks is not None:
                        self.blocks.apply(converted)
            if batch:
                host.kv_events(self.id, batch)

        try:
            await self._poll(self.llm.get_kv_cache_events_async, deliver, interval, "KV cache events",
                             wake=self.kv_wake, after_round=self._kv_round_done)
        finally:
            self._kv_round_done()  # nobody waits for a round that will not come

    def _poll_stats(self, interval):
        rejects = RejectLog("statistics")

        def deliver(rows):
            for st in rows:
                try:
                    row = _stats_tuple(st)
                except Exception as e:  # one malformed row must not stop the stream
                    self._rejected("stats", rejects, st, e)
                    continue
                host.stats(self.id, row)

        return self._poll(self.llm.get_stats_async, deliver, interval, "iteration statistics")

    # -- shutdown ---------------------------------------------------------------------------------

    async def close(self, grace_s=5.0):
        """Cancels every live request (each gets one final CANCELLED response), stops polling and
        shuts the LLM down. Tasks that outlive the grace period (a cancellation swallowed inside the
        LLM) are answered here and silenced."""
        self.polling = False
        self.kv_wake.set()
        ids = list(self.live)
        for rid in ids:
            self.cancel(rid)
        for p in self.pollers:
            p.cancel()
        waiting = list(self.live.values()) + self.pollers
        if waiting:
            await asyncio.wait(waiting, timeout=grace_s)
        for rid in list(self.live):  # still running after the grace period: answer and silence them
            self._final(rid, CANCELLED, "executor shut down")
        self.closed = True
        try:
            self.llm.shutdown()
        except Exception:
            log.exception("engine %d: LLM.shutdown() failed", self.id)


class Host:
    """The loop: commands in through the eventfd, one task per request."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self.engines = {}
        self.destroying = set()
        self.stopping = False

    def run(self):
        self.loop.add_reader(host.wake_fd(), self._on_wake)
        self.loop.call_soon(host.loop_ready)
        self._on_wake()  # commands queued before the reader was added
        try:
            self.loop.run_forever()
        finally:
            if self.destroying:  # engines already being destroyed: let them finish
                self.loop.run_until_complete(asyncio.gather(*self.destroying, return_exceptions=True))
            self.loop.run_until_complete(self._close_all())
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.run_until_complete(self.loop.shutdown_default_executor())
            self.loop.remove_reader(host.wake_fd())
            self.loop.close()

    def _on_wake(self):
        for kind, engine_id, arg in host.drain():
            try:
                self._command(kind, engine_id, arg)
            except BaseException:  # one bad command must not drop the rest of the batch
                error = traceback.format_exc()
                log.error("command %d for engine %d failed: %s", kind, engine_id, error)
                if kind == SUBMIT:
                    host.emit(engine_id, arg[0], (), ERROR, True, error, BACKEND_FAILURE, None, -1, -1,
                              RANK_FROM_EXECUTOR)
                elif kind == CALL:
                    host.reply(arg[0], error, None, None)
                elif kind == CREATE:
                    host.engine_ready(engine_id, error, "")
                elif kind == DESTROY:
                    host.engine_destroyed(engine_id)

    def _command(self, kind, engine_id, arg):
        if kind == SUBMIT:
            engine = self.engines.get(engine_id)
            if engine is None or self.stopping:
                host.emit(engine_id, arg[0], (), ERROR, True, "engine %d is not running" % engine_id, BACKEND_FAILURE,
                          None, -1, -1, RANK_FROM_EXECUTOR)
            else:
                engine.submit(arg)
        elif kind == CANCEL:
            engine = self.engines.get(engine_id)
            if engine is not None:
                engine.cancel(arg)
        elif kind == CALL:
            call_id, op, text, tokens = arg
            engine = self.engines.get(engine_id)
            try:
                error, out_text, out_tokens = (engine.call(op, text, tokens) if engine is not None
                                               else ("engine %d is not running" % engine_id, None, None))
            except Exception:
                error, out_text, out_tokens = traceback.format_exc(), None, None
            host.reply(call_id, error, out_text, out_tokens)
        elif kind == CREATE:
            self._create(engine_id, arg)
        elif kind == DESTROY:
            task = self.loop.create_task(self._destroy(engine_id))
            self.destroying.add(task)
            task.add_done_callback(self.destroying.discard)
        elif kind == STOP:
            self.stopping = True
            self.loop.stop()

    def _create(self, engine_id, config_json):
        try:
            engine = Engine(engine_id, json.loads(config_json), self.loop)
        except BaseException:
            host.engine_ready(engine_id, traceback.format_exc(), "")
            return
        self.engines[engine_id] = engine
        host.engine_ready(engine_id, None, engine.describe())

    async def _destroy(self, engine_id):
        engine = self.engines.pop(engine_id, None)
        try:
            if engine is not None:
                await engine.close()
        except BaseException:
            log.exception("engine %d: closing failed", engine_id)
        finally:
            host.engine_destroyed(engine_id)  # the executor waits for this, whatever happened

    async def _close_all(self):
        for engine_id in list(self.engines):
            await self._destroy(engine_id)
