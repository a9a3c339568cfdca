"""A stand-in for the tensorrt_llm package, for tests without a GPU or TensorRT-LLM.

It implements exactly the LLM-API call signatures Affinity's pytorch backend uses (LLM,
generate_async, RequestOutput, abort, get_kv_cache_events_async, get_stats_async, shutdown and the
parameter dataclasses), checks the types it receives, and records every call as one JSON line.
Options ride on the model name: "standin?record=/tmp/calls.jsonl&delay_ms=5&fail=init".
"""
from .disaggregated_params import DisaggregatedParams
from .llm import LLM
from .sampling_params import SamplingParams

__version__ = "0.0.0+affinity.standin"
__all__ = ["LLM", "SamplingParams", "DisaggregatedParams"]
