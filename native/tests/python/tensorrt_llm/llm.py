"""Stand-in LLM: deterministic tokens, a per-rank prefix cache, KV events and iteration stats."""
import asyncio
import base64
import hashlib
import itertools
import json
import os
import threading
from dataclasses import dataclass, field
from typing import List, Optional
from urllib.parse import parse_qs

from .conversation_params import ConversationParams
from .disaggregated_params import DisaggregatedParams
from .sampling_params import SamplingParams
from .scheduling_params import SchedulingParams

ERROR_TOKEN = 999999  # a prompt containing it fails inside generation (error propagation tests)
_ids = itertools.count(1)
_contexts = {}  # ctx_request_id -> opaque state, across every stand-in LLM of the process (the "transceiver")
_lock = threading.Lock()


@dataclass
class CompletionOutput:
    index: int = 0
    text: str = ""
    token_ids: List[int] = field(default_factory=list)
    finish_reason: Optional[str] = None
    stop_reason: Optional[int] = None
    disaggregated_params: Optional[DisaggregatedParams] = None
    token_ids_diff: List[int] = field(default_factory=list)


class RequestOutput:
    def __init__(self, llm, request_id, prompt, sampling, streaming, disagg, rank, cached):
        self._llm = llm
        self.request_id = request_id
        self.prompt_token_ids = prompt
        self.outputs = [CompletionOutput()]
        self.cached_tokens = cached
        self.finished = False
        self._sampling = sampling
        self._streaming = streaming
        self._disagg = disagg
        self._rank = rank
        self._aborted = False

    def abort(self):
        self._aborted = True
        self._llm._record({"call": "abort", "request_id": self.request_id})

    def aborted(self):
        return self._aborted

    async def _steps(self):
        out = self.outputs[0]
        sp = self._sampling
        ctx_only = self._disagg is not None and self._disagg.request_type == "context_only"
        gen_only = self._disagg is not None and self._disagg.request_type == "generation_only"
        max_tokens = 1 if ctx_only else sp.max_tokens
        if gen_only:
            with _lock:
                state = _contexts.pop(self._disagg.ctx_request_id, None)
            if state is None or state != self._disagg.opaque_state:
                raise ValueError("stand-in: no context %r with that opaque state" % (self._disagg.ctx_request_id,))
        base = sum(self.prompt_token_ids) % 997
        self._llm._inflight[self._rank] += 1
        try:
            async for step in self._generate(out, sp, max_tokens, base, ctx_only, gen_only):
                yield step
        finally:
            self._llm._inflight[self._rank] -= 1

    async def _generate(self, out, sp, max_tokens, base, ctx_only, gen_only):
        for i in range(max_tokens):
            if self._llm._delay:
                await asyncio.sleep(self._llm._delay)
            else:
                await asyncio.sleep(0)
            if self._aborted:
                out.finish_reason = "cancelled"
                out.token_ids_diff = []
                self.finished = True
                yield self
                return
            if ERROR_TOKEN in self.prompt_token_ids:
                raise RuntimeError("stand-in: the prompt asked for an error")
            if gen_only and i == 0 and self._disagg.first_gen_tokens:
                tok = self._disagg.first_gen_tokens[0]
            else:
                tok = 1 + (base + 7 * (i + 1)) % 1000
            out.token_ids.append(tok)
            # As TensorRT-LLM: a streamed generation_only request leaves the context server's first
            # token out of its first diff (token_ids still holds it).
            out.token_ids_diff = [] if gen_only and self._streaming and i == 0 else [tok]
            self._llm._iteration(self._rank, 1 if i == 0 and not gen_only else 0, len(self.prompt_token_ids) if i == 0 else 0)
            if sp.end_id is not None and tok == sp.end_id:
                out.finish_reason = "stop"
            elif sp.stop_token_ids and tok in sp.stop_token_ids:
                out.finish_reason, out.stop_reason = "stop", tok
            elif i + 1 == max_tokens:
                out.finish_reason = "length"
            if out.finish_reason is not None:
                break
            if self._streaming:
                yield self
        if ctx_only:
            opaque = b"standin-ctx:%d:%d" % (self.request_id, len(self.prompt_token_ids))
            with _lock:
                _contexts[self.request_id] = opaque
            out.disaggregated_params = DisaggregatedParams(
                request_type="context_only", first_gen_tokens=list(out.token_ids), ctx_request_id=self.request_id,
                opaque_state=opaque, draft_tokens=None, ctx_dp_rank=self._rank)
        self.finished = True
        self._llm._store(self._rank, self.prompt_token_ids)
        yield self

    def __aiter__(self):
        return self._steps()

    def __await__(self):
        async def run():
            async for _ in self._steps():
                pass
            return self
        return run().__await__()


class StandInTokenizer:
    """Characters as token ids, with BOS = 1 first: enough to tell text, chat template and decoding
    apart. With repeat=n every character becomes n ids (more ids than the text has bytes)."""
    BOS = 1

    def __init__(self, repeat=1):
        self.repeat = repeat

    def encode(self, text, add_special_tokens=True):
        return ([self.BOS] if add_special_tokens else []) + [ord(c) for c in text for _ in range(self.repeat)]

    def decode(self, token_ids, skip_special_tokens=False):
        return "".join(chr(t) for t in token_ids if not (skip_special_tokens and t == self.BOS))

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=False):
        text = "".join("<|%s|>%s\n" % (m["role"], m["content"]) for m in messages)
        if add_generation_prompt:
            text += "<|assistant|>"
        return self.encode(text) if tokenize else text


class IterationResult:
    """One long-lived stream of KV events or statistics, as tensorrt_llm's IterationResult: an
    iteration ends once nothing arrived within the timeout and stays ended ("done") until
    mark_undone(), which generate_async calls."""

    def __init__(self):
        self._queue = asyncio.Queue()
        self._done = False
        self._timeout = 2

    def set_timeout(self, timeout):
        self._timeout = timeout

    def mark_undone(self):
        self._done = False

    def put(self, item):
        self._queue.put_nowait(item)

    def __aiter__(self):
        return self

    async def __anext__(self):
        if self._done:
            raise StopAsyncIteration
        try:
            return await asyncio.wait_for(self._queue.get(), self._timeout)
        except asyncio.TimeoutError:
            self._done = True
            raise StopAsyncIteration


class LLM:
    def __init__(self, model, tensor_parallel_size=1, **kwargs):
        options = {}
        if "?" in model:
            model, query = model.split("?", 1)
            options = {k: v[-1] for k, v in parse_qs(query).items()}
        self._record_path = options.get("record")
        self._delay = float(options.get("delay_ms", 0)) / 1000.0
        self._record({"call": "LLM", "model": model, "tensor_parallel_size": tensor_parallel_size,
                      "kwargs": kwargs, "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}, default=str)
        if options.get("fail") == "init":
            raise RuntimeError("stand-in LLM refused to start (fail=init)")
        known = {"enable_attention_dp", "kv_cache_config", "cache_transceiver_config", "attention_dp_config",
                 "scheduler_config", "enable_iter_perf_stats", "return_perf_metrics", "max_batch_size",
                 "max_num_tokens", "backend"}
        unknown = set(kwargs) - known
        if unknown:
            raise ValueError("stand-in LLM: unknown arguments %s" % sorted(unknown))
        kv = kwargs.get("kv_cache_config") or {}
        if not isinstance(kv, dict):
            raise TypeError("stand-in LLM: kv_cache_config must be a dict here")
        self._ranks = tensor_parallel_size if kwargs.get("enable_attention_dp") else 1
        self._block = int(kv.get("tokens_per_block", 32))
        self._max_batch = int(kwargs.get("max_batch_size") or 1 << 20)
        self._max_num_tokens = int(kwargs.get("max_num_tokens") or 0)
        self._events_on = int(kv.get("event_buffer_max_size", 0)) > 0
        self._stats_on = bool(kwargs.get("enable_iter_perf_stats"))
        self._cached = [set() for _ in range(self._ranks)]
        self._inflight = [0] * self._ranks
        self._rr = 0
        self._bound = {}
        self._event_id = 0
        self._iter = 0
        self._events = None
        self._stats = None
        self.closed = False
        self.tokenizer = StandInTokenizer(int(options.get("token_repeat", 1)))

    # -- recording -----------------------------------------------------------------------------

    def _record(self, entry, default=None):
        if self._record_path:
            with _lock, open(self._record_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry, sort_keys=True, default=default) + "\n")

    @staticmethod
    def _check(name, value, cls):
        if value is not None and not isinstance(value, cls):
            raise TypeError("stand-in LLM: %s must be %s, got %s" % (name, cls.__name__, type(value).__name__))

    # -- the API -------------------------------------------------------------------------------

    def generate_async(self, inputs, sampling_params=None, lora_request=None, prompt_adapter_request=None,
                       streaming=False, kv_cache_retention_config=None, disaggregated_params=None,
                       trace_headers=None, _postproc_params=None, scheduling_params=None,
                       conversation_params=None, cache_salt=None, priority=0.5):
        if self.closed:
            raise RuntimeError("stand-in LLM is shut down")
        if not isinstance(inputs, list) or not all(isinstance(t, int) for t in inputs):
            raise TypeError("stand-in LLM: inputs must be a list of token ids")
        if self._max_num_tokens and len(inputs) > self._max_num_tokens:  # as TensorRT-LLM's argument checks
            raise ValueError("stand-in LLM: prompt of %d tokens exceeds max_num_tokens %d"
                             % (len(inputs), self._max_num_tokens))
        self._check("sampling_params", sampling_params, SamplingParams)
        self._check("disaggregated_params", disaggregated_params, DisaggregatedParams)
        self._check("scheduling_params", scheduling_params, SchedulingParams)
        self._check("conversation_params", conversation_params, ConversationParams)
        sampling_params = sampling_params or SamplingParams()
        rid = next(_ids)
        if self._events is None:  # the streams exist once the first request was submitted
            self._events, self._stats = IterationResult(), IterationResult()
        self._events.mark_undone()
        self._stats.mark_undone()
        rank = self._rank_for(scheduling_params, conversation_params)
        cached = self._match(rank, inputs)

        def dc(obj):
            if obj is None:
                return None
            d = {k: getattr(obj, k) for k in obj.__dataclass_fields__}
            if isinstance(d.get("opaque_state"), bytes):
                d["opaque_state"] = base64.b64encode(d["opaque_state"]).decode()
            return d

        self._record({"call": "generate_async", "request_id": rid, "prompt_token_ids": inputs,
                      "sampling_params": dc(sampling_params), "streaming": streaming,
                      "disaggregated_params": dc(disaggregated_params), "scheduling_params": dc(scheduling_params),
                      "conversation_params": dc(conversation_params), "cache_salt": cache_salt,
                      "priority": priority, "rank": rank})
        return RequestOutput(self, rid, list(inputs), sampling_params, streaming, disaggregated_params, rank, cached)

    def _rank_for(self, sp, cp):
        if sp is not None and sp.attention_dp_rank is not None and 0 <= sp.attention_dp_rank < self._ranks:
            return sp.attention_dp_rank
        key = (sp.subagent_affinity_id if sp is not None else None) or (cp.conversation_id if cp is not None else None)
        if key is not None:
            if key not in self._bound:
                self._bound[key] = self._rr % self._ranks
                self._rr += 1
            return self._bound[key]
        self._rr += 1
        return (self._rr - 1) % self._ranks

    def _blocks(self, tokens):
        h = hashlib.sha256()
        out = []
        for b in range(len(tokens) // self._block):
            h.update(json.dumps(tokens[b * self._block:(b + 1) * self._block]).encode())
            out.append(int.from_bytes(h.digest()[:8], "little"))
        return out

    def _match(self, rank, tokens):
        n = 0
        for key in self._blocks(tokens):
            if key not in self._cached[rank]:
                break
            n += self._block
        return n

    def _store(self, rank, tokens):
        parent = None
        for b, key in enumerate(self._blocks(tokens)):
            if key not in self._cached[rank]:
                self._cached[rank].add(key)
                if self._events_on:
                    self._event_id += 1
                    blk = tokens[b * self._block:(b + 1) * self._block]
                    self._events.put({
                        "event_id": self._event_id, "window_size": 4096, "attention_dp_rank": rank,
                        "data": {"type": "stored", "parent_hash": parent, "blocks": [{
                            "type": "stored_block", "block_hash": key, "cache_level": 0, "priority": 35,
                            "tokens": [{"type": "unique_token", "token_id": t, "token_extra_id": 0} for t in blk]}]}})
            parent = key

    def _iteration(self, rank, ctx_requests, ctx_tokens):
        if not self._stats_on:
            return
        self._iter += 1
        used = len(self._cached[rank])
        # Requests in flight on the rank beyond max_batch_size count as queued (rank 0 reports the queue).
        inflight = self._inflight[rank]
        active = min(inflight, self._max_batch)
        self._stats.put({
            "iter": self._iter, "iterLatencyMS": 1.5, "numActiveRequests": active, "attentionDpRank": rank,
            "numQueuedRequests": sum(max(0, n - self._max_batch) for n in self._inflight) if rank == 0 else 0,
            "kvCacheStats": {"maxNumBlocks": 1000, "freeNumBlocks": 1000 - used, "usedNumBlocks": used,
                             "tokensPerBlock": self._block, "allocTotalBlocks": used, "allocNewBlocks": used,
                             "reusedBlocks": 0, "missedBlocks": used, "cacheHitRate": 0.0},
            "inflightBatchingStats": {"numContextRequests": ctx_requests, "numGenRequests": 1 - ctx_requests,
                                      "numCtxTokens": ctx_tokens}})

    def get_kv_cache_events_async(self, timeout=2):
        assert self._events is not None, "no KV event stream before the first request"
        self._events.set_timeout(timeout)
        return self._events

    def get_stats_async(self, timeout=2):
        assert self._stats is not None, "no statistics stream before the first request"
        self._stats.set_timeout(timeout)
        return self._stats

    def shutdown(self):
        self.closed = True
        self._record({"call": "shutdown"})
