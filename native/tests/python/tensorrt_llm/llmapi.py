"""Stand-in for tensorrt_llm.llmapi: SchedulingParams and ConversationParams live here, and the LLM's
argument sections (KvCacheConfig, CacheTransceiverConfig, AttentionDpConfig, SchedulerConfig)."""
from .conversation_params import ConversationParams
from .disaggregated_params import DisaggregatedParams
from .llm import LLM, CompletionOutput, RequestOutput
from .llm_args import AttentionDpConfig, CacheTransceiverConfig, KvCacheConfig, SchedulerConfig
from .sampling_params import SamplingParams
from .scheduling_params import SchedulingParams

__all__ = ["LLM", "RequestOutput", "CompletionOutput", "SamplingParams", "DisaggregatedParams",
           "SchedulingParams", "ConversationParams", "KvCacheConfig", "CacheTransceiverConfig", "AttentionDpConfig",
           "SchedulerConfig"]
