"""Stand-in for tensorrt_llm.llmapi: SchedulingParams, ConversationParams and KvCacheRetentionConfig (the bindings'
class, re-exported) live here, and the LLM's argument sections (KvCacheConfig, CacheTransceiverConfig,
AttentionDpConfig, SchedulerConfig)."""
from .conversation_params import ConversationParams
from .disaggregated_params import DisaggregatedParams
from .kv_cache_retention_config import KvCacheRetentionConfig
from .llm import LLM, CompletionOutput, RequestOutput
from .llm_args import AttentionDpConfig, CacheTransceiverConfig, KvCacheConfig, SchedulerConfig
from .sampling_params import SamplingParams
from .scheduling_params import SchedulingParams

__all__ = ["LLM", "RequestOutput", "CompletionOutput", "SamplingParams", "DisaggregatedParams",
           "SchedulingParams", "ConversationParams", "KvCacheConfig", "CacheTransceiverConfig", "AttentionDpConfig",
           "SchedulerConfig", "KvCacheRetentionConfig"]
