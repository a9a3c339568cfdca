"""Stand-in LLM: deterministic tokens, a per-rank prefix cache, KV events and iteration stats.

Where TensorRT-LLM is less kind than a naive fake, the stand-in behaves as upstream does; each such
place names the upstream file and commit it follows (NVIDIA/TensorRT-LLM):

* keyword arguments: TorchLlmArgs' keys, sections as mappings or objects, unknown keys a ValueError
  (llm_args.py, see llm_args.py here);
* context_only outputs finish with 'not_finished'; a stop token leaves token_ids unless
  include_stop_str_in_output; cached_tokens is set on every response (tensorrt_llm/executor/result.py
  @ a678b91aafbeff265cd0b764abb59d7def624ac2, GenerationResultBase._handle_response / _handle_sequence);
* releases whose context output has no ctx_dp_rank (the same result.py builds the context output's
  DisaggregatedParams from first_gen_tokens, req_id, opaque_state and draft_tokens only): option
  ctx_dp_rank=omit;
* the Python KV-transfer path (cache_transceiver_config.transceiver_runtime PYTHON, llm_args.py @
  0004396720054fd8e205cbf616f21f0b57c6b412 CacheTransceiverConfig): the context output carries
  ctx_info_endpoint and disagg_request_id, and the generation request must bring them back with the
  opaque state (disaggregated_params.py @ b828daced8dcf69000b172b183b5ff45e5a158d1);
* statistics before the first request are an empty iterable, KV events assert
  (tensorrt_llm/executor/executor.py @ ed53795b33fc139493f762a1c6c53f691cf52d38, aget_stats /
  aget_kv_events);
* with attention DP every rank's statistics row copies numActiveRequests and kvCacheStats from one
  base row (rank 0's) and only inflightBatchingStats differs per rank; rows of other ranks report
  no queue (tensorrt_llm/executor/iteration_stats.py @ b11790149e0e12e52ea82ed7a4d51b51ea98dce6,
  _materialize_frame). Option stats=rank0: older releases, one row (rank 0's);
* attention_dp_rank on KV events only with attention DP (the C++ KVCacheEvent's attentionDpRank is
  optional);
* option malformed=1: a list, an event without a block hash and one with a non-hex hash lead the KV
  event stream, a list leads the statistics stream (the driver must skip them and go on);
* the ADP router: an explicit attention_dp_rank places the request (and binds a new conversation's
  first turn to it, PR #16815); conversations stick to a rank only when attention_dp_config
  .kv_cache_routing_conversation_affinity is true (ConversationAwareADPRouter, PR #14983; the key is
  subagent_affinity_id, else the conversation id, PR #18684); everything else is round-robined;
* generate_async's priority must be a float in [0, 1], else a ValueError (tensorrt_llm/executor/request.py,
  GenerationRequest); kv_cache_retention_config must be a KvCacheRetentionConfig (the bindings' class, which checks
  its ranges: see kv_cache_retention_config.py here).
"""
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

from . import llm_args
from .conversation_params import ConversationParams
from .disaggregated_params import DisaggregatedParams
from .kv_cache_retention_config import KvCacheRetentionConfig
from .sampling_params import SamplingParams
from .scheduling_params import SchedulingParams

ERROR_TOKEN = 999999  # a prompt containing it fails inside generation (error propagation tests)
_ids = itertools.count(1)
_llm_ids = itertools.count(1)
_contexts = {}  # ctx_request_id -> what the context left for its generation request (the "transceiver")
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
        self.cached_tokens = 0  # as upstream: 0 until the first response sets it
        self.finished = False
        self._sampling = sampling
        self._streaming = streaming
        self._disagg = disagg
        self._rank = rank
        self._cached = cached
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
            self._llm._take_context(self._disagg)
        base = sum(self.prompt_token_ids) % 997
        llm = self._llm
        llm._inflight[self._rank] += 1
        prefill = [not gen_only]
        if prefill[0]:
            llm._prefill[self._rank] += 1
        try:
            async for step in self._generate(out, sp, max_tokens, base, ctx_only, gen_only, prefill):
                yield step
        finally:
            llm._inflight[self._rank] -= 1
            if prefill[0]:
                llm._prefill[self._rank] -= 1

    async def _generate(self, out, sp, max_tokens, base, ctx_only, gen_only, prefill):
        llm = self._llm
        for i in range(max_tokens):
            if llm._delay:
                await asyncio.sleep(llm._delay)
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
            before = len(out.token_ids)
            out.token_ids.append(tok)
            self.cached_tokens = 0 if gen_only else self._cached  # set on every response, as upstream
            llm._iteration(self._rank, len(self.prompt_token_ids) if prefill[0] else 0)
            if prefill[0]:
                prefill[0] = False
                llm._prefill[self._rank] -= 1
            if sp.end_id is not None and tok == sp.end_id:
                out.finish_reason = "stop"  # END_ID: the token stays (the driver drops it)
            elif sp.stop_token_ids and tok in sp.stop_token_ids:
                out.finish_reason, out.stop_reason = "stop", tok
                if not sp.include_stop_str_in_output:  # STOP_WORDS: stripped unless asked for
                    out.token_ids = out.token_ids[:-1]
            elif ctx_only:
                out.finish_reason = "not_finished"  # context_only: NOT_FINISHED, not a stop
            elif i + 1 == max_tokens:
                out.finish_reason = "length"
            # As TensorRT-LLM: a streamed generation_only request leaves the context server's first
            # token out of its first diff (token_ids still holds it).
            out.token_ids_diff = [] if gen_only and self._streaming and i == 0 else out.token_ids[before:]
            if out.finish_reason is not None:
                break
            if self._streaming:
                yield self
        if ctx_only and out.finish_reason == "not_finished":
            out.disaggregated_params = llm._leave_context(self, list(out.token_ids))
        self.finished = True
        llm._store(self._rank, self.prompt_token_ids)
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


async def _empty():
    """executor.py's empty_async_iterable: what get_stats_async returns before the first request."""
    return
    yield  # noqa: unreachable, makes this an async generator


def _recordable(obj):
    return obj.to_dict() if hasattr(obj, "to_dict") else str(obj)


class LLM:
    def __init__(self, model, **kwargs):
        options = {}
        if "?" in model:
            model, query = model.split("?", 1)
            options = {k: v[-1] for k, v in parse_qs(query).items()}
        self._record_path = options.get("record")
        self._delay = float(options.get("delay_ms", 0)) / 1000.0
        self._record({"call": "LLM", "model": model, "kwargs": kwargs,
                      "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}, default=_recordable)
        if options.get("fail") == "init":
            raise RuntimeError("stand-in LLM refused to start (fail=init)")
        sections = llm_args.validate(kwargs)
        kv, transceiver, adp = (sections["kv_cache_config"], sections["cache_transceiver_config"],
                                sections["attention_dp_config"])
        self._adp = bool(kwargs.get("enable_attention_dp"))
        self._ranks = int(kwargs.get("tensor_parallel_size") or 1) if self._adp else 1
        self._block = int(kv.tokens_per_block)
        self._max_batch = int(kwargs.get("max_batch_size") or 1 << 20)
        self._max_num_tokens = int(kwargs.get("max_num_tokens") or 0)
        self._events_on = int(kv.event_buffer_max_size or 0) > 0
        self._stats_on = bool(kwargs.get("enable_iter_perf_stats"))
        self._conversation_affinity = bool(adp.kv_cache_routing_conversation_affinity)
        self._python_transfer = transceiver.transceiver_runtime == "PYTHON"
        self._endpoint = "standin-transfer://llm-%d" % next(_llm_ids)
        self._report_ctx_rank = options.get("ctx_dp_rank") != "omit"
        self._rank0_stats_only = options.get("stats") == "rank0"
        self._malformed = options.get("malformed") == "1"  # items of unexpected shapes lead both streams
        self._cached = [set() for _ in range(self._ranks)]
        self._inflight = [0] * self._ranks
        self._prefill = [0] * self._ranks
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
        self._check("kv_cache_retention_config", kv_cache_retention_config, KvCacheRetentionConfig)
        if not isinstance(priority, float) or not 0.0 <= priority <= 1.0:
            raise ValueError("stand-in LLM: priority must be a float in [0, 1], got %r" % (priority,))
        sampling_params = sampling_params or SamplingParams()
        rid = next(_ids)
        if self._events is None:  # the streams exist once the first request was submitted
            self._events, self._stats = IterationResult(), IterationResult()
            if self._malformed:
                for bad in ([1, 2], {"event_id": 1, "data": {"type": "stored", "blocks": [{"tokens": []}]}},
                            {"event_id": 2, "data": {"type": "removed", "block_hashes": ["zz" * 32]}}):
                    self._events.put(bad)
                self._stats.put([1, 2])
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
                      "priority": priority, "rank": rank,
                      "kv_cache_retention_config": (kv_cache_retention_config.to_dict()
                                                    if kv_cache_retention_config is not None else None)})
        return RequestOutput(self, rid, list(inputs), sampling_params, streaming, disaggregated_params, rank, cached)

    def _rank_for(self, sp, cp):
        hint = sp.attention_dp_rank if sp is not None else None
        if hint is not None and not 0 <= hint < self._ranks:
            hint = None
        key = None
        if self._conversation_affinity:
            key = (sp.subagent_affinity_id if sp is not None else None) or (cp.conversation_id if cp is not None else None)
        if hint is not None:
            if key is not None and key not in self._bound:
                self._bound[key] = hint  # an explicit rank binds a new conversation's first turn
            return hint
        if key is not None:
            if key not in self._bound:
                self._bound[key] = self._rr % self._ranks
                self._rr += 1
            return self._bound[key]
        self._rr += 1
        return (self._rr - 1) % self._ranks

    # -- the context hand-off ("transceiver") ----------------------------------------------------

    def _leave_context(self, out, first_gen):
        """Holds the context for its generation request; returns the context output's params."""
        rid = out.request_id
        opaque = b"standin-ctx:%d:%d" % (rid, len(out.prompt_token_ids))
        asked = out._disagg.disagg_request_id
        entry = {"opaque": opaque, "endpoint": None, "disagg_request_id": None}
        params = {"request_type": "context_only", "first_gen_tokens": first_gen, "ctx_request_id": rid,
                  "opaque_state": opaque, "draft_tokens": None}
        if self._report_ctx_rank:
            params["ctx_dp_rank"] = out._rank
        if self._python_transfer:
            entry["endpoint"] = params["ctx_info_endpoint"] = self._endpoint
            entry["disagg_request_id"] = params["disagg_request_id"] = asked if asked is not None else rid + (1 << 40)
        with _lock:
            _contexts[rid] = entry
        return DisaggregatedParams(**params)

    def _take_context(self, dp):
        with _lock:
            entry = _contexts.pop(dp.ctx_request_id, None)
        if entry is None or entry["opaque"] != dp.opaque_state:
            raise ValueError("stand-in: no context %r with that opaque state" % (dp.ctx_request_id,))
        if self._python_transfer and (dp.ctx_info_endpoint is None or dp.ctx_info_endpoint != entry["endpoint"]
                                      or dp.disagg_request_id != entry["disagg_request_id"]):
            raise RuntimeError("stand-in: the Python KV transfer needs the context's ctx_info_endpoint %r and "
                               "disagg_request_id %r, got %r and %r" % (entry["endpoint"], entry["disagg_request_id"],
                                                                        dp.ctx_info_endpoint, dp.disagg_request_id))

    # -- the prefix cache, KV events and statistics -------------------------------------------------

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
                    event = {
                        "event_id": self._event_id, "window_size": 4096,
                        "data": {"type": "stored", "parent_hash": parent, "blocks": [{
                            "type": "stored_block", "block_hash": key, "cache_level": 0, "priority": 35,
                            "tokens": [{"type": "unique_token", "token_id": t, "token_extra_id": 0} for t in blk]}]}}
                    if self._adp:  # optional upstream: set only with attention DP
                        event["attention_dp_rank"] = rank
                    self._events.put(event)
            parent = key

    def _kv_stats(self, rank):
        used = len(self._cached[rank])
        return {"maxNumBlocks": 1000, "freeNumBlocks": 1000 - used, "usedNumBlocks": used,
                "tokensPerBlock": self._block, "allocTotalBlocks": used, "allocNewBlocks": used,
                "reusedBlocks": 0, "missedBlocks": used, "cacheHitRate": 0.0}

    def _iteration(self, rank, ctx_tokens):
        """One iteration's statistics: a row per rank built from one base row (rank 0's), as upstream."""
        if not self._stats_on:
            return
        self._iter += 1
        # Requests in flight on a rank beyond max_batch_size wait in the queue.
        scheduled = [min(n, self._max_batch) for n in self._inflight]
        queued = sum(max(0, n - self._max_batch) for n in self._inflight)
        base = {"iter": self._iter, "iterLatencyMS": 1.5, "numActiveRequests": scheduled[0],
                "numQueuedRequests": queued, "kvCacheStats": self._kv_stats(0)}
        ranks = [0] if self._rank0_stats_only or not self._adp else range(self._ranks)
        for r in ranks:
            ctx = min(self._prefill[r], scheduled[r])
            row = dict(base, attentionDpRank=r, inflightBatchingStats={
                "numScheduledRequests": scheduled[r], "numContextRequests": ctx,
                "numGenRequests": scheduled[r] - ctx, "numPausedRequests": 0,
                "numCtxTokens": ctx_tokens if r == rank else 0})
            if r != 0:
                row["numQueuedRequests"] = 0
            self._stats.put(row)

    def get_kv_cache_events_async(self, timeout=2):
        assert self._events is not None, "KV Event IterationResult is not properly instantiated."
        self._events.set_timeout(timeout)
        return self._events

    def get_stats_async(self, timeout=2):
        if self._stats is None:
            return _empty()
        self._stats.set_timeout(timeout)
        return self._stats

    def shutdown(self):
        self.closed = True
        self._record({"call": "shutdown"})
