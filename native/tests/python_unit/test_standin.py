"""The stand-in tensorrt_llm behaves as upstream does where upstream is less kind than a naive fake
(each case names the upstream source in native/tests/python/tensorrt_llm/llm.py)."""
import asyncio
import unittest

import common  # noqa: F401  (puts the stand-in on sys.path)
from tensorrt_llm import LLM, DisaggregatedParams, SamplingParams
from tensorrt_llm.llmapi import (AttentionDpConfig, CacheTransceiverConfig, ConversationParams, KvCacheConfig,
                                 SchedulingParams)

ADP = {"tensor_parallel_size": 2, "enable_attention_dp": True}


LOOP = asyncio.new_event_loop()


def tearDownModule():
    LOOP.close()


def run(coro):
    return LOOP.run_until_complete(coro)


async def drain(stream):
    return [item async for item in stream]


class ArgumentsTest(unittest.TestCase):
    def test_torch_llm_args_keys_are_accepted_and_unknown_ones_refused(self):
        LLM("standin", disable_overlap_scheduler=True, enable_chunked_prefill=True, max_seq_len=4096,
            cuda_graph_config=None, **ADP)
        with self.assertRaisesRegex(ValueError, "bogus"):
            LLM("standin", bogus=1)

    def test_sections_as_mappings_or_objects(self):
        a = LLM("standin", kv_cache_config={"tokens_per_block": 8, "free_gpu_memory_fraction": 0.35})
        b = LLM("standin", kv_cache_config=KvCacheConfig(tokens_per_block=8),
                cache_transceiver_config=CacheTransceiverConfig(backend="DEFAULT"),
                attention_dp_config=AttentionDpConfig(kv_cache_routing_conversation_affinity=True), **ADP)
        self.assertEqual((a._block, b._block), (8, 8))
        self.assertTrue(b._conversation_affinity)
        with self.assertRaisesRegex(ValueError, "tokens_per_blok"):
            LLM("standin", kv_cache_config={"tokens_per_blok": 8})
        with self.assertRaisesRegex(ValueError, "kv_cache_routing_conversation_afinity"):
            AttentionDpConfig(kv_cache_routing_conversation_afinity=True)
        with self.assertRaisesRegex(ValueError, "transceiver_runtime"):
            LLM("standin", cache_transceiver_config={"transceiver_runtime": "RUST"})


class StreamsTest(unittest.TestCase):
    def test_statistics_before_the_first_request_are_an_empty_iterable(self):
        llm = LLM("standin", enable_iter_perf_stats=True)
        self.assertEqual(run(drain(llm.get_stats_async(0.01))), [])
        with self.assertRaises(AssertionError):
            llm.get_kv_cache_events_async(0.01)  # upstream asserts here

    def events(self, **args):
        llm = LLM("standin", kv_cache_config={"tokens_per_block": 4, "event_buffer_max_size": 100}, **args)

        async def go():
            await llm.generate_async(list(range(8)), sampling_params=SamplingParams(max_tokens=1))
            return await drain(llm.get_kv_cache_events_async(0.01))
        return run(go())

    def test_attention_dp_rank_only_with_attention_dp(self):
        self.assertTrue(all("attention_dp_rank" not in ev for ev in self.events()))
        self.assertTrue(all("attention_dp_rank" in ev for ev in self.events(**ADP)))

    def test_statistics_rows_copy_the_base_row_and_differ_in_batching_only(self):
        llm = LLM("standin?delay_ms=1", enable_iter_perf_stats=True, **ADP)

        async def go():
            await llm.generate_async([1, 2, 3], sampling_params=SamplingParams(max_tokens=2),
                                     scheduling_params=SchedulingParams(attention_dp_rank=1))
            return await drain(llm.get_stats_async(0.01))
        rows = run(go())
        self.assertEqual([r["attentionDpRank"] for r in rows], [0, 1, 0, 1])
        first = rows[:2]
        self.assertEqual(first[0]["numActiveRequests"], first[1]["numActiveRequests"])  # copied: rank 0's 0
        self.assertEqual(first[0]["kvCacheStats"], first[1]["kvCacheStats"])
        self.assertEqual([r["inflightBatchingStats"]["numScheduledRequests"] for r in first], [0, 1])
        older = LLM("standin?stats=rank0", enable_iter_perf_stats=True, **ADP)

        async def go_older():
            await older.generate_async([1, 2, 3], sampling_params=SamplingParams(max_tokens=2))
            return await drain(older.get_stats_async(0.01))
        self.assertEqual({r["attentionDpRank"] for r in run(go_older())}, {0})


class RoutingTest(unittest.TestCase):
    def ranks(self, llm, turns):
        out = []
        for hint, conv in turns:
            sp = SchedulingParams(attention_dp_rank=hint) if hint is not None else None
            cp = ConversationParams(conversation_id=conv) if conv else None
            out.append(llm._rank_for(sp, cp))
        return out

    def test_conversations_stick_only_with_conversation_affinity(self):
        plain = LLM("standin", **ADP)
        self.assertEqual(self.ranks(plain, [(None, "c"), (None, "c")]), [0, 1])  # round-robined
        sticky = LLM("standin", attention_dp_config={"kv_cache_routing_conversation_affinity": True}, **ADP)
        self.assertEqual(self.ranks(sticky, [(None, "c"), (None, "x"), (None, "c")]), [0, 1, 0])

    def test_an_explicit_rank_binds_a_conversations_first_turn(self):
        sticky = LLM("standin", attention_dp_config={"kv_cache_routing_conversation_affinity": True}, **ADP)
        # The hint places the first turn and binds it; a later conflicting hint places that turn only.
        self.assertEqual(self.ranks(sticky, [(1, "c"), (None, "c"), (0, "c"), (None, "c")]), [1, 1, 0, 1])


class OutputsTest(unittest.TestCase):
    def test_a_context_only_output_is_not_finished_and_carries_its_params(self):
        llm = LLM("standin", **ADP)
        out = run(_await(llm.generate_async([1, 2, 3, 4, 5], sampling_params=SamplingParams(max_tokens=9),
                                            disaggregated_params=DisaggregatedParams(request_type="context_only"))))
        c = out.outputs[0]
        self.assertEqual(c.finish_reason, "not_finished")
        self.assertEqual(len(c.token_ids), 1)
        self.assertIsNotNone(c.disaggregated_params.ctx_dp_rank)
        older = LLM("standin?ctx_dp_rank=omit", **ADP)
        out = run(_await(older.generate_async([1, 2, 3], sampling_params=SamplingParams(max_tokens=2),
                                              disaggregated_params=DisaggregatedParams(request_type="context_only"))))
        self.assertIsNone(out.outputs[0].disaggregated_params.ctx_dp_rank)

    def test_a_stop_token_is_stripped_unless_asked_for(self):
        llm = LLM("standin")
        prompt = [1, 2, 3]
        third = 1 + (sum(prompt) % 997 + 7 * 3) % 1000
        stripped = run(_await(llm.generate_async(prompt, sampling_params=SamplingParams(max_tokens=9,
                                                                                        stop_token_ids=[third]))))
        kept = run(_await(llm.generate_async(prompt, sampling_params=SamplingParams(
            max_tokens=9, stop_token_ids=[third], include_stop_str_in_output=True))))
        self.assertEqual(len(stripped.outputs[0].token_ids), 2)
        self.assertEqual(kept.outputs[0].token_ids[-1], third)
        self.assertEqual((stripped.outputs[0].finish_reason, stripped.outputs[0].stop_reason), ("stop", third))

    def test_cached_tokens_are_set_on_every_response(self):
        llm = LLM("standin", kv_cache_config={"tokens_per_block": 4})
        prompt = list(range(8))
        run(_await(llm.generate_async(prompt, sampling_params=SamplingParams(max_tokens=1))))
        result = llm.generate_async(prompt, sampling_params=SamplingParams(max_tokens=3), streaming=True)
        self.assertEqual(result.cached_tokens, 0)  # before the first response

        async def go():
            return [out.cached_tokens async for out in result]
        self.assertEqual(run(go()), [8, 8, 8])

    def test_the_python_kv_transfer_needs_the_endpoint_and_request_id_back(self):
        args = dict(cache_transceiver_config={"backend": "NIXL", "transceiver_runtime": "PYTHON"}, **ADP)
        ctx, gen = LLM("standin", **args), LLM("standin", **args)
        prompt = [1, 2, 3, 4, 5]

        def context():
            out = run(_await(ctx.generate_async(prompt, sampling_params=SamplingParams(max_tokens=1),
                                                disaggregated_params=DisaggregatedParams(request_type="context_only"))))
            return out.outputs[0].disaggregated_params

        def generation(dp, **override):
            fields = dict(request_type="generation_only", ctx_request_id=dp.ctx_request_id,
                          opaque_state=dp.opaque_state, first_gen_tokens=dp.first_gen_tokens,
                          ctx_info_endpoint=dp.ctx_info_endpoint, disagg_request_id=dp.disagg_request_id)
            fields.update(override)
            return run(_await(gen.generate_async(prompt, sampling_params=SamplingParams(max_tokens=2),
                                                 disaggregated_params=DisaggregatedParams(**fields))))

        dp = context()
        self.assertIsNotNone(dp.ctx_info_endpoint)
        self.assertIsNotNone(dp.disagg_request_id)
        self.assertEqual(generation(dp).outputs[0].finish_reason, "length")
        with self.assertRaisesRegex(RuntimeError, "ctx_info_endpoint"):
            generation(context(), ctx_info_endpoint=None, disagg_request_id=None)


async def _await(result):
    return await result


if __name__ == "__main__":
    unittest.main()
