"""driver.py without the host library: its conversions on their own, and an Engine over the stand-in
tensorrt_llm (or a hand-made LLM where the stand-in cannot show a case) with a fake _affinity_host."""
import asyncio
import datetime
import enum
import json
import os
import tempfile
import unittest

from common import driver, fakehost

D = driver


def request(rid, tokens, max_new=4, rtype=D.CONTEXT_AND_GENERATION, streaming=False, end_id=-1, rank_hint=-1,
            relax=True, ctx=None, stops=(), priority=0.5, retention=None):
    """The request tuple pyhost.cpp builds (Engine._params unpacks it). retention: None, or (ranges,
    decode_retention_priority, decode_duration_ms) with ranges of (token_start, token_end, priority, duration_ms)."""
    return (rid, max_new, rtype, streaming, end_id, 0, rank_hint, relax, priority, None, ctx, list(tokens),
            list(stops), None, None, retention)


def finals(rid):
    return [e for e in fakehost.emitted if e[1] == rid and e[4]]


def tokens_of(rid):
    out = []
    for e in fakehost.emitted:
        if e[1] == rid:
            out.extend(e[2])
    return out


class EngineCase(unittest.TestCase):
    """An Engine on its own event loop, closed after the test."""

    def setUp(self):
        fakehost.reset()
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self.engines = []

    def tearDown(self):
        for e in self.engines:
            self.loop.run_until_complete(e.close(grace_s=1.0))
        self.loop.close()

    def engine(self, model="standin", ranks=2, llm_args=None, poll_ms=5, rank_wait_ms=20000):
        args = {"tensor_parallel_size": ranks, "enable_attention_dp": ranks > 1,
                "kv_cache_config": {"tokens_per_block": 4}}
        args.update(llm_args or {})
        config = {"model": model, "llm_args": args, "num_ranks": ranks, "tokens_per_block": 4,
                  "kv_events": {"enabled": True, "poll_interval_ms": poll_ms, "rank_wait_ms": rank_wait_ms},
                  "stats_poll_interval_ms": poll_ms}
        e = D.Engine(1, config, self.loop)
        self.engines.append(e)
        return e

    def run_until(self, condition, what, timeout=20.0):
        async def wait():
            deadline = self.loop.time() + timeout
            while not condition():
                if self.loop.time() > deadline:
                    raise AssertionError("never happened: " + what)
                await asyncio.sleep(0.002)
        self.loop.run_until_complete(wait())

    def finish(self, engine, req):
        engine.submit(req)
        self.run_until(lambda: finals(req[0]), "request %d's final response" % req[0])
        self.assertEqual(len(finals(req[0])), 1)
        return finals(req[0])[0]


# -- the context state --------------------------------------------------------------------------------

class Style(enum.IntEnum):
    GENERATION_FIRST = 1


class ContextStateTest(unittest.TestCase):
    def params(self, **kw):
        from tensorrt_llm import DisaggregatedParams
        base = dict(request_type="context_only", first_gen_tokens=[5], ctx_request_id=9, opaque_state=b"\x01state")
        base.update(kw)
        return DisaggregatedParams(**base)

    def test_the_llms_opaque_state_crosses_byte_for_byte_when_nothing_else_is_set(self):
        self.assertEqual(D.pack_context_state(self.params(ctx_dp_rank=1)), b"\x01state")
        self.assertEqual(D.unpack_context_state(b"\x01state"), (b"\x01state", {}))

    def test_every_other_field_travels_in_the_state_and_comes_back(self):
        dp = self.params(ctx_info_endpoint="tcp://10.0.0.1:5000", disagg_request_id=77, draft_tokens=[1, 2],
                         schedule_style=Style.GENERATION_FIRST,
                         multimodal_embedding_handles=[{"handle": b"\x00\xff", "shape": [2, 3]}])
        state = D.pack_context_state(dp)
        self.assertNotEqual(state, b"\x01state")
        opaque, fields = D.unpack_context_state(state)
        self.assertEqual(opaque, b"\x01state")
        self.assertEqual(fields, {"ctx_info_endpoint": "tcp://10.0.0.1:5000", "disagg_request_id": 77,
                                  "draft_tokens": [1, 2], "schedule_style": 1,
                                  "multimodal_embedding_handles": [{"handle": b"\x00\xff", "shape": [2, 3]}]})

    def test_a_context_without_opaque_state_has_none_on_the_way_back(self):
        opaque, fields = D.unpack_context_state(D.pack_context_state(self.params(opaque_state=None, disagg_request_id=3)))
        self.assertIsNone(opaque)
        self.assertEqual(fields, {"disagg_request_id": 3})

    def test_a_value_that_cannot_travel_is_left_out_with_a_warning(self):
        with self.assertLogs("affinity.pyhost", "WARNING") as logs:
            state = D.pack_context_state(self.params(first_gen_logits=[object()], disagg_request_id=4))
        self.assertIn("first_gen_logits", logs.output[0])
        self.assertEqual(D.unpack_context_state(state)[1], {"disagg_request_id": 4})


# -- KV events, statistics, finish reasons ---------------------------------------------------------------

class ConversionTest(unittest.TestCase):
    def test_an_event_of_an_unexpected_shape_raises(self):
        for bad in ([1, 2], "not json", {"data": {"type": "stored", "blocks": [{"tokens": []}]}},
                    {"data": {"type": "removed", "block_hashes": ["zz" * 32]}},
                    {"data": {"type": "removed", "block_hashes": [True]}}):
            with self.assertRaises(Exception, msg=repr(bad)):
                D._kv_event(bad, 0)

    def test_attention_dp_rank_is_optional(self):
        ev = {"event_id": 3, "data": {"type": "removed", "block_hashes": ["ab" * 32]}}
        self.assertEqual(D._kv_event(ev, 0)[2], 0)
        self.assertEqual(D._kv_event(dict(ev, attention_dp_rank=1), 0)[2], 1)
        self.assertEqual(D._kv_event(ev, 0)[5], [int("ab" * 8, 16)])

    def test_a_ranks_load_is_its_own_batching_fields_never_the_copied_ones(self):
        base = {"iter": 7, "iterLatencyMS": 2.0, "numActiveRequests": 9, "numQueuedRequests": 4,
                "kvCacheStats": {"maxNumBlocks": 100, "freeNumBlocks": 60, "usedNumBlocks": 40, "tokensPerBlock": 4}}
        r0 = dict(base, attentionDpRank=0, inflightBatchingStats={
            "numContextRequests": 1, "numGenRequests": 2, "numPausedRequests": 1, "numCtxTokens": 30})
        r1 = dict(base, attentionDpRank=1, numQueuedRequests=0, inflightBatchingStats={
            "numContextRequests": 0, "numGenRequests": 3, "numPausedRequests": 0, "numCtxTokens": 0})
        t0, t1 = D._stats_tuple(r0), D._stats_tuple(r1)
        self.assertEqual(t0[6][0][:3], (0, 4, 100))  # rank 0: 1 + 2 + 1, and its KV figures
        self.assertEqual(t0[5], 4)                  # the queue, from rank 0's row
        self.assertEqual(t1[6][0][:3], (1, 3, -1))  # rank 1: 0 + 3; the KV figures are rank 0's copy
        self.assertEqual(t1[5], -1)
        self.assertEqual((t0[6][0][-1], t1[6][0][-1]), (30, 0))  # each rank's own context tokens
        no_ifb = D._stats_tuple(dict(base, attentionDpRank=0))
        self.assertEqual(no_ifb[6][0][1], -1)  # no per-rank fields: unknown, never numActiveRequests
        self.assertEqual(no_ifb[6][0][-1], -1)
        with self.assertRaises(TypeError):
            D._stats_tuple([1, 2])

    def test_finish_reasons(self):
        out = lambda reason, stop=None: type("O", (), {"finish_reason": reason, "stop_reason": stop})()
        self.assertEqual(D._finish_code(out("not_finished")), D.LENGTH)  # context complete, not end id
        self.assertEqual(D._finish_code(out("length")), D.LENGTH)
        self.assertEqual(D._finish_code(out("stop")), D.END_ID)
        self.assertEqual(D._finish_code(out("stop", 7)), D.STOP_WORDS)
        self.assertEqual(D._finish_code(out("cancelled")), D.CANCELLED)

    def test_a_trailing_stop_or_end_token_is_never_visible(self):
        self.assertEqual(D.Engine._visible([1, 2, 9], {9}), [1, 2])
        self.assertEqual(D.Engine._visible([1, 9, 2], {9}), [1, 9, 2])
        self.assertEqual(D.Engine._visible([], {9}), [])


class BlockIndexTest(unittest.TestCase):
    def stored(self, index, rank, tokens, parent=None, first_hash=100):
        hashes = [first_hash + i for i in range(len(tokens) // 4)]
        index.apply((0, 1, rank, 0, parent, hashes, list(tokens), 0, 0))
        return hashes

    def test_the_rank_holding_the_prompt_blocks(self):
        index = D.BlockIndex(2)
        prompt = list(range(10))  # two full blocks of 4 before the last token
        self.stored(index, 1, prompt[:8])
        self.assertEqual(index.rank_of(prompt, 4, cached=0, since=0, final=False), 1)
        self.assertEqual(index.rank_of(list(range(1, 11)), 4, cached=0, since=0, final=True), -1)

    def test_a_request_that_stored_blocks_needs_blocks_stored_after_it_began(self):
        index = D.BlockIndex(2)
        prompt = list(range(10))
        self.stored(index, 0, prompt[:8])  # an earlier request's copy on rank 0
        since = index.sequence
        self.assertEqual(index.rank_of(prompt, 4, cached=0, since=since, final=False), -1)  # wait for its own
        self.assertEqual(index.rank_of(prompt, 4, cached=0, since=since, final=True), 0)    # or take the only one
        self.stored(index, 1, prompt[:8], first_hash=200)  # its own blocks, on rank 1
        self.assertEqual(index.rank_of(prompt, 4, cached=0, since=since, final=False), 1)
        self.assertEqual(index.rank_of(prompt, 4, cached=8, since=since, final=True), -1)  # fully cached: both hold it

    def test_removed_blocks_are_forgotten(self):
        index = D.BlockIndex(2)
        prompt = list(range(10))
        hashes = self.stored(index, 1, prompt[:8])
        index.apply((0, 2, 1, 0, None, hashes[1:], [], 0, 0))
        self.assertEqual(index.rank_of(prompt, 4, cached=0, since=0, final=True), -1)
        self.assertEqual(index.rank_of(prompt[:5], 4, cached=0, since=0, final=True), 1)

    def test_short_prompts_have_no_block(self):
        self.assertEqual(D.BlockIndex.blocks_needed(3, 4), 0)
        self.assertEqual(D.BlockIndex.blocks_needed(4, 4), 1)
        self.assertEqual(D.BlockIndex.blocks_needed(9, 4), 2)


# -- an Engine over the stand-in ---------------------------------------------------------------------------

class EngineTest(EngineCase):
    def test_a_malformed_item_is_logged_counted_and_the_pollers_go_on(self):
        e = self.engine("standin?malformed=1")
        with self.assertLogs("affinity.pyhost", "WARNING") as logs:
            self.finish(e, request(1, range(40, 48), rank_hint=0, relax=False))
            self.run_until(lambda: len(fakehost.rejected) == 4 and sum(len(b) for _, b in fakehost.kv_events) == 2,
                           "four rejected items and the request's two KV events")
        self.assertEqual(sorted(s for _, s, _ in fakehost.rejected), ["kv_events"] * 3 + ["stats"])
        self.assertEqual(len([line for line in logs.output if "unexpected shape" in line]), 4)
        self.finish(e, request(2, range(60, 68), rank_hint=1, relax=False))
        self.run_until(lambda: sum(len(b) for _, b in fakehost.kv_events) == 4, "the next request's KV events")
        self.assertTrue(fakehost.stats)
        self.assertTrue(all(not p.done() for p in e.pollers))

    def test_the_rank_falls_back_to_the_pin_then_the_kv_events(self):
        with tempfile.TemporaryDirectory() as tmp:
            record = os.path.join(tmp, "calls.jsonl")
            e = self.engine("standin?ctx_dp_rank=omit&record=" + record)
            pinned = self.finish(e, request(1, range(10), rtype=D.CONTEXT_ONLY, rank_hint=1, relax=False))
            self.assertEqual((pinned[9], pinned[10]), (1, D.RANK_FROM_HINT))
            self.assertEqual(pinned[7][1], -1)  # the context phase params keep what the LLM said
            for rid in (2, 3):
                free = self.finish(e, request(rid, range(10 * rid, 10 * rid + 10), rtype=D.CONTEXT_ONLY))
                with open(record) as f:
                    served = [json.loads(line) for line in f if '"generate_async"' in line][-1]["rank"]
                self.assertEqual((free[9], free[10]), (served, D.RANK_FROM_KV_EVENTS))
                self.assertEqual(free[3], D.LENGTH)  # 'not_finished': the context is complete
        gen = self.finish(e, request(4, range(30, 40), rtype=D.GENERATION_ONLY, ctx=free[7]))
        self.assertEqual((gen[9], gen[10]), (-1, D.RANK_FROM_EXECUTOR))  # no prompt of its own was stored

    def test_an_llm_that_reports_its_rank_is_believed(self):
        e = self.engine()
        r = self.finish(e, request(1, range(10), rtype=D.CONTEXT_ONLY, rank_hint=0, relax=True))
        self.assertEqual((r[9], r[10]), (r[7][1], D.RANK_FROM_EXECUTOR))

    def test_the_python_kv_transfer_gets_every_field_back(self):
        transfer = {"cache_transceiver_config": {"backend": "NIXL", "transceiver_runtime": "PYTHON"}}
        e = self.engine(llm_args=transfer)
        ctx = self.finish(e, request(1, range(10), rtype=D.CONTEXT_ONLY))
        gen = self.finish(e, request(2, range(10), max_new=3, rtype=D.GENERATION_ONLY, ctx=ctx[7]))
        self.assertEqual(gen[5], None, gen[5])
        self.assertEqual(gen[3], D.LENGTH)
        self.assertEqual(tokens_of(2)[0], ctx[7][2][0])

    def test_cached_tokens_of_the_last_response(self):
        e = self.engine()
        self.finish(e, request(1, range(100, 116), rank_hint=1, relax=False))
        r = self.finish(e, request(2, range(100, 116), rank_hint=1, relax=False, streaming=True))
        self.assertEqual(r[8], 16)


# -- KV-cache retention and priority ---------------------------------------------------------------------

class RetentionTest(EngineCase):
    """A request's retention reaches generate_async as TensorRT-LLM's KvCacheRetentionConfig."""

    def engine(self, **kw):
        e = super().engine(ranks=1, **kw)
        self.received = []  # generate_async's keyword arguments, as the stand-in got them
        inner = e.llm.generate_async

        def generate_async(tokens, **kwargs):
            self.received.append(kwargs)
            return inner(tokens, **kwargs)
        e.llm.generate_async = generate_async
        return e

    def test_retention_and_priority_reach_generate_async(self):
        from tensorrt_llm.llmapi import KvCacheRetentionConfig
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)  # after tearDown, which shuts the LLM down (and records that)
        record = os.path.join(tmp.name, "calls.jsonl")
        e = self.engine(model="standin?record=" + record)
        # Given out of order: the config sorts its ranges by token_start, as upstream.
        retention = ([(8, None, 10, None), (0, 8, 90, 30000)], 5, 2500)
        r = self.finish(e, request(1, range(12), priority=0.8, retention=retention))
        self.assertEqual(r[3], D.LENGTH)
        with open(record) as f:
            recorded = [json.loads(line) for line in f if '"generate_async"' in line][-1]
        kwargs = self.received[-1]
        self.assertEqual(kwargs["priority"], 0.8)
        config = kwargs["kv_cache_retention_config"]
        self.assertIsInstance(config, KvCacheRetentionConfig)
        ranges = [(g.token_start, g.token_end, g.priority, g.duration_ms) for g in config.token_range_retention_configs]
        self.assertEqual(ranges, [(0, 8, 90, datetime.timedelta(seconds=30)), (8, None, 10, None)])
        self.assertEqual(config.decode_retention_priority, 5)
        self.assertEqual(config.decode_duration_ms, datetime.timedelta(milliseconds=2500))
        self.assertEqual(recorded["priority"], 0.8)
        self.assertEqual(recorded["kv_cache_retention_config"], {
            "token_range_retention_configs": [
                {"token_start": 0, "token_end": 8, "priority": 90, "duration_ms": 30000.0},
                {"token_start": 8, "token_end": None, "priority": 10, "duration_ms": None}],
            "decode_retention_priority": 5, "decode_duration_ms": 2500.0})

    def test_decode_retention_alone_has_no_ranges_and_no_duration(self):
        e = self.engine()
        self.finish(e, request(1, range(12), retention=([], 80, None)))
        config = self.received[-1]["kv_cache_retention_config"]
        self.assertEqual(config.token_range_retention_configs, [])
        self.assertEqual((config.decode_retention_priority, config.decode_duration_ms), (80, None))

    def test_a_request_without_retention_passes_none_and_the_default_priority_is_left_out(self):
        e = self.engine()
        r = self.finish(e, request(1, range(12)))
        self.assertEqual(r[3], D.LENGTH)
        self.assertNotIn("kv_cache_retention_config", self.received[-1])
        self.assertNotIn("priority", self.received[-1])

    def test_a_config_upstream_refuses_is_a_bad_request(self):
        e = self.engine()
        r = self.finish(e, request(1, range(12), retention=([(0, 64, 50, None), (60, 80, 50, None)], 35, None)))
        self.assertEqual((r[3], r[6]), (D.ERROR, D.BAD_REQUEST))
        self.assertIn("non-overlapping", r[5])
        self.assertEqual(self.received, [])  # refused before generate_async
        endless = self.finish(e, request(2, range(12), retention=([(0, None, 50, 1 << 62)], 35, None)))
        self.assertEqual((endless[3], endless[6]), (D.ERROR, D.BAD_REQUEST))  # beyond what a timedelta holds
        self.assertIn("too long", endless[5])
        self.assertEqual(self.finish(e, request(3, range(12)))[3], D.LENGTH)

    def test_a_release_without_kv_cache_retention_config_drops_it_and_says_so_once(self):
        e = self.engine()
        e.KvCacheRetentionConfig = None
        with self.assertLogs("affinity.pyhost", "WARNING") as logs:
            for rid in (1, 2):
                r = self.finish(e, request(rid, range(12), priority=0.25, retention=([(0, None, 90, None)], 35, None)))
                self.assertEqual(r[3], D.LENGTH)
        self.assertEqual(len([line for line in logs.output if "KvCacheRetentionConfig" in line]), 1)
        self.assertTrue(all("kv_cache_retention_config" not in kw for kw in self.received))
        self.assertEqual([kw["priority"] for kw in self.received], [0.25, 0.25])
        self.assertFalse(json.loads(e.describe())["kv_cache_retention_supported"])


class StandInRetentionTest(unittest.TestCase):
    """The stand-in's KvCacheRetentionConfig and generate_async check what upstream checks
    (cpp/tensorrt_llm/executor/kvCacheRetentionConfig.cpp; tensorrt_llm/executor/request.py)."""

    @staticmethod
    def config(*ranges, **kw):
        from tensorrt_llm.llmapi import KvCacheRetentionConfig
        T = KvCacheRetentionConfig.TokenRangeRetentionConfig
        return KvCacheRetentionConfig([T(start, end, 50) for start, end in ranges], **kw)

    def test_valid_ranges_are_sorted(self):
        for ranges in ([(0, 64), (90, 128)], [(0, None)], [(50, 100), (30, 40)], [(0, 30), (30, 50), (60, 80)],
                       [(64, None), (0, 64)], []):
            config = self.config(*ranges)
            got = [(g.token_start, g.token_end) for g in config.token_range_retention_configs]
            self.assertEqual(got, sorted(ranges), ranges)

    def test_invalid_ranges_are_value_errors(self):
        for ranges, message in (([(0, None), (30, 50)], "end indicator"), ([(0, 64), (60, 80)], "non-overlapping"),
                                ([(0, 128), (64, 256)], "non-overlapping"), ([(-1, 4)], "non-negative"),
                                ([(5, 5)], "non-zero length"), ([(8, 4)], "non-zero length"),
                                ([(30, 50), (0, None)], "end indicator")):
            with self.assertRaisesRegex(ValueError, message, msg=repr(ranges)):
                self.config(*ranges)

    def test_priorities_outside_0_to_100_are_refused(self):
        from tensorrt_llm.llmapi import KvCacheRetentionConfig
        T = KvCacheRetentionConfig.TokenRangeRetentionConfig
        for prio in (-1, 101):
            with self.assertRaisesRegex(RuntimeError, "priority"):
                T(0, 4, prio)
        self.assertEqual((T(0, 4, 0).priority, T(0, 4, 100).priority), (0, 100))

    def test_durations_are_timedeltas_and_arguments_have_upstreams_defaults(self):
        from tensorrt_llm.llmapi import KvCacheRetentionConfig
        T = KvCacheRetentionConfig.TokenRangeRetentionConfig
        with self.assertRaises(TypeError):
            T(0, 4, 50, 1000)
        with self.assertRaises(TypeError):
            self.config((0, 4), decode_duration_ms=1000)
        with self.assertRaises(TypeError):
            T(0, 4)  # token_end and priority have no default
        self.assertEqual(T(0, 4, 50, datetime.timedelta(seconds=1)).duration_ms, datetime.timedelta(seconds=1))
        config = self.config((0, 4))
        self.assertEqual((config.decode_retention_priority, config.decode_duration_ms), (35, None))

    def test_generate_async_checks_the_config_type_and_the_priority(self):
        from tensorrt_llm import LLM
        llm = LLM("standin")
        with self.assertRaises(TypeError):
            llm.generate_async([1, 2, 3], kv_cache_retention_config={"token_start": 0})
        for bad in (1.5, -0.1, 1, "0.5"):
            with self.assertRaises(ValueError, msg=repr(bad)):
                llm.generate_async([1, 2, 3], priority=bad)
        for good in (0.0, 1.0):
            llm.generate_async([1, 2, 3], priority=good, kv_cache_retention_config=self.config((0, None)))
        llm.shutdown()


class OverlapLLM:
    """An LLM whose streamed output shows a stop token one response before the final one strips it
    (TensorRT-LLM strips a stop token on the final response: executor/result.py _handle_sequence)."""

    def __init__(self, steps):
        self.steps = steps

    def generate_async(self, tokens, **kwargs):
        steps = self.steps

        class Result:
            cached_tokens = 0

            def abort(self):
                pass

            def __aiter__(self):
                return self.gen()

            def __await__(self):
                async def last():
                    async for _ in self.gen():
                        pass
                    return self
                return last().__await__()

            async def gen(self):
                for token_ids, reason, stop in steps:
                    self.outputs = [type("C", (), {"token_ids": token_ids, "finish_reason": reason,
                                                   "stop_reason": stop, "disaggregated_params": None})()]
                    self.finished = reason is not None
                    yield self
        return Result()

    def get_kv_cache_events_async(self, timeout):
        return _Nothing()

    def get_stats_async(self, timeout):
        return _Nothing()

    def shutdown(self):
        pass


class _Nothing:
    def __aiter__(self):
        return self

    async def __anext__(self):
        raise StopAsyncIteration


class CancelTest(EngineCase):
    def test_an_aborted_request_waits_for_no_rank(self):
        e = self.engine(rank_wait_ms=600000)  # a wait for the KV events would outlast the test
        e.llm = OverlapLLM([([5], None, None), ([5], "cancelled", None)])
        r = self.finish(e, request(1, range(10), streaming=True))
        self.assertEqual((r[3], r[9]), (D.CANCELLED, -1))


class StopTokenTest(EngineCase):
    def engine(self, **kw):
        return super().engine(ranks=1)

    def test_a_stop_token_shown_before_the_final_response_is_emitted_never(self):
        e = self.engine()
        e.llm = OverlapLLM([([5], None, None), ([5, 6, 9], None, None), ([5, 6], "stop", 9)])
        r = self.finish(e, request(1, range(10), streaming=True, stops=[9]))
        self.assertEqual(tokens_of(1), [5, 6])
        self.assertEqual(r[3], D.STOP_WORDS)

    def test_a_stop_token_kept_by_include_stop_str_in_output_is_not_emitted(self):
        e = self.engine()
        e.llm = OverlapLLM([([5], None, None), ([5, 6, 9], "stop", 9)])
        r = self.finish(e, request(1, range(10), streaming=True, stops=[9]))
        self.assertEqual(tokens_of(1), [5, 6])
        self.assertEqual(r[3], D.STOP_WORDS)

    def test_an_end_id_the_release_keeps_is_dropped(self):
        e = self.engine()
        e.llm = OverlapLLM([([5, 6, 2], "stop", None)])
        r = self.finish(e, request(1, range(10), end_id=2))
        self.assertEqual(r[2], [5, 6])
        self.assertEqual(r[3], D.END_ID)


if __name__ == "__main__":
    unittest.main()
