# The Python half of Affinity's "pytorch" backend. libaffinity_pyhost.so compiles this file into the
# embedded interpreter (module "affinity_pyhost_driver") and runs Host.run() on its one host thread.
#
# Java threads never run Python: they queue commands in C++ and write an eventfd; the loop wakes,
# drains the commands through the built-in module _affinity_host, and starts one asyncio task per
# request around tensorrt_llm.LLM.generate_async. Results go back through _affinity_host.emit, which
# hands them to the executor's response queue in C++. Every accepted request gets exactly one final
# response, also when it is cancelled before its task starts or when its engine shuts down.
import asyncio
import dataclasses
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


def _error_kind(code):
    """The error kind a final response with this finish code has unless it is classified otherwise."""
    return CANCELLED_KIND if code == CANCELLED else BACKEND_FAILURE if code == ERROR else NO_ERROR
REQUEST_TYPES = ("context_and_generation", "context_only", "generation_only")


def _finish_code(output):
    reason = getattr(output, "finish_reason", None)
    if reason in ("length", "timeout"):  # timeout: the request's allotted time ran out
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


def _block_key(h):
    """A block hash as the 64-bit key Java's index uses: ints as they are, SHA-256 hex by its first 8 bytes."""
    if isinstance(h, str):
        return int(h[:16], 16) if len(h) == 64 else int(h)
    return int(h)


def _kv_event(ev, default_rank):
    data = ev.get("data") or {}
    kind = data.get("type")
    rank = ev.get("attention_dp_rank")
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


def _stats_tuple(st):
    """One iteration-stats row (one per attention-DP rank) as the tuple _affinity_host.stats reads."""
    if isinstance(st, str):
        st = json.loads(st)
    ifb = st.get("inflightBatchingStats") or {}
    kv = st.get("kvCacheStats") or {}
    rank = int(st.get("attentionDpRank") or 0)
    row = (rank, int(st.get("numActiveRequests", -1))) + tuple(
        int(kv.get(k, -1)) for k in ("maxNumBlocks", "freeNumBlocks", "usedNumBlocks", "tokensPerBlock",
                                     "allocTotalBlocks", "allocNewBlocks", "reusedBlocks", "missedBlocks")
    ) + (float(kv.get("cacheHitRate", -1)),)
    queued = int(st.get("numQueuedRequests", -1)) if rank == 0 else -1  # only rank 0 reports the queue
    return (int(st.get("iter", -1)), float(st.get("iterLatencyMS", -1)), int(ifb.get("numContextRequests", -1)),
            int(ifb.get("numGenRequests", -1)), int(ifb.get("numCtxTokens", -1)), queued, [row])


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

    def _final(self, rid, code, error=None, ctx=None, tokens=(), reused=-1, rank=-1, kind=None):
        """The request's one final response (later calls for the same request do nothing)."""
        if rid in self.final_sent or self.closed:
            return
        kind = _error_kind(code) if kind is None else kind
        try:
            host.emit(self.id, rid, tokens, code, True, error, kind, ctx, reused, rank)
        except Exception:  # e.g. a result the bridge cannot read: still end the request
            log.exception("engine %d: request %d: emitting its result failed", self.id, rid)
            host.emit(self.id, rid, (), ERROR, True, "the result could not be passed on (see the host log)",
                      BACKEND_FAILURE, None, -1, -1)
        self.final_sent.add(rid)

    def _params(self, req):
        (rid, max_new, rtype, streaming, end_id, seed, rank_hint, relax, priority, cache_salt, ctx_phase,
         tokens, stop_ids, conversation_id, subagent_id) = req
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
        if rtype != 0:
            dp = {"request_type": REQUEST_TYPES[rtype]}
            if ctx_phase is not None:
                ctx_id, ctx_rank, first_gen, opaque = ctx_phase
                dp.update(ctx_request_id=ctx_id, first_gen_tokens=list(first_gen), opaque_state=opaque or None)
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
        return list(tokens), kwargs

    @staticmethod
    def _context_phase(output):
        dp = getattr(output, "disaggregated_params", None)
        if dp is None:
            return None
        rank = getattr(dp, "ctx_dp_rank", None)
        return (int(dp.ctx_request_id or 0), -1 if rank is None else int(rank),
                list(dp.first_gen_tokens or []), bytes(dp.opaque_state or b""))

    def _reused(self, result):
        cached = getattr(result, "cached_tokens", None)
        return -1 if cached is None else int(cached)

    async def _run(self, req):
        rid, rtype, streaming = req[0], req[2], req[3]
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
            if streaming:
                # New tokens by our own count, not token_ids_diff: for a streamed generation_only
                # request TensorRT-LLM leaves the first token (the context server's) out of the diff,
                # and the facade's generation responses start with it.
                sent = 0
                async for out in result:
                    c = out.outputs[0]
                    new, sent = list(c.token_ids[sent:]), len(c.token_ids)
                    if out.finished:
                        ctx = self._context_phase(c)
                        self._final(rid, _finish_code(c), None, ctx, new, self._reused(out), ctx[1] if ctx else -1)
                    elif new and not self.closed:
                        host.emit(self.id, rid, new, NOT_FINISHED, False, None, NO_ERROR, None, -1, -1)
                if rid not in self.final_sent:
                    self._final(rid, END_ID)
            else:
                out = await result
                c = out.outputs[0]
                ctx = self._context_phase(c)
                self._final(rid, _finish_code(c), None, ctx, list(c.token_ids), self._reused(out), ctx[1] if ctx else -1)
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

    async def _poll(self, open_stream, deliver, interval, what):
        """Reads one of the LLM's streams in rounds of at most `interval` seconds (a round also ends
        once nothing came within the timeout) and hands each round's items to deliver, so a busy
        stream is delivered at least every interval."""
        while self.polling:
            items = []
            started = time.monotonic()
            try:
                async for item in self._stream(open_stream(interval)):
                    items.append(json.loads(item) if isinstance(item, str) else item)
                    if time.monotonic() - started >= interval:
                        break
            except IndexError:  # the LLM's way of saying "nothing more now"
                pass
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("engine %d: reading %s failed", self.id, what)
            if items and not self.closed:
                deliver(items)
            elapsed = time.monotonic() - started
            if elapsed < interval:
                await asyncio.sleep(interval - elapsed)

    def _poll_kv_events(self, interval):
        def deliver(events):
            batch = [t for t in (_kv_event(ev, 0) for ev in events) if t is not None]
            if batch:
                host.kv_events(self.id, batch)
        return self._poll(self.llm.get_kv_cache_events_async, deliver, interval, "KV cache events")

    def _poll_stats(self, interval):
        def deliver(rows):
            for st in rows:
                host.stats(self.id, _stats_tuple(st))
        return self._poll(self.llm.get_stats_async, deliver, interval, "iteration statistics")

    # -- shutdown ---------------------------------------------------------------------------------

    async def close(self, grace_s=5.0):
        """Cancels every live request (each gets one final CANCELLED response), stops polling and
        shuts the LLM down. Tasks that outlive the grace period (a cancellation swallowed inside the
        LLM) are answered here and silenced."""
        self.polling = False
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
                    host.emit(engine_id, arg[0], (), ERROR, True, error, BACKEND_FAILURE, None, -1, -1)
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
                          None, -1, -1)
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
