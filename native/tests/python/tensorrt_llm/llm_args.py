"""Stand-in for tensorrt_llm.llmapi.llm_args: the LLM's keyword arguments and their nested sections.

Upstream (NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py @ 0004396720054fd8e205cbf616f21f0b57c6b412)
validates them with pydantic models that forbid extra keys (StrictBaseModel, BaseLlmArgs with
extra="forbid"): an unknown key raises a ValidationError, which is a ValueError. Every nested section
(kv_cache_config, cache_transceiver_config, attention_dp_config, scheduler_config, ...) may be given
as a plain mapping or as the section's object. The stand-in keeps the key names of BaseLlmArgs and
TorchLlmArgs and checks the sections the backend and the examples use, key by key.
"""

# BaseLlmArgs and TorchLlmArgs fields (the PyTorch backend's LLM), without "model".
TORCH_LLM_ARGS = frozenset((
    # BaseLlmArgs
    "tokenizer", "tokenizer_mode", "custom_tokenizer", "skip_tokenizer_init", "trust_remote_code",
    "tensor_parallel_size", "dtype", "revision", "tokenizer_revision", "model_kwargs", "pipeline_parallel_size",
    "context_parallel_size", "gpus_per_node", "moe_cluster_parallel_size", "moe_tensor_parallel_size",
    "moe_expert_parallel_size", "enable_attention_dp", "enable_lm_head_tp_in_adp", "pp_partition", "cp_config",
    "load_format", "enable_lora", "lora_config", "kv_cache_config", "enable_chunked_prefill",
    "guided_decoding_backend", "batched_logits_processor", "iter_stats_max_iterations",
    "request_stats_max_iterations", "peft_cache_config", "scheduler_config", "cache_transceiver_config",
    "sparse_attention_config", "speculative_config", "max_batch_size", "max_input_len", "max_seq_len",
    "max_beam_width", "max_num_tokens", "gather_generation_logits", "num_postprocess_workers",
    "postprocess_tokenizer_dir", "reasoning_parser", "decoding_config", "mpi_session", "otlp_traces_endpoint",
    "backend", "return_perf_metrics", "perf_metrics_max_requests", "orchestrator_type", "env_overrides",
    # TorchLlmArgs
    "garbage_collection_gen0_threshold", "cuda_graph_config", "attention_dp_config", "disable_overlap_scheduler",
    "moe_config", "nvfp4_gemm_config", "attn_backend", "sampler_type", "sampler_force_async_worker",
    "enable_iter_perf_stats", "enable_iter_req_stats", "print_iter_log", "batch_wait_timeout_ms",
    "batch_wait_timeout_iters", "batch_wait_max_tokens_ratio", "torch_compile_config", "enable_autotuner",
    "enable_layerwise_nvtx_marker", "enable_min_latency", "stream_interval", "force_dynamic_quantization",
    "allreduce_strategy", "checkpoint_loader", "checkpoint_format", "kv_connector_config", "mm_encoder_only",
    "ray_worker_extension_cls", "ray_placement_config", "enable_sleep", "use_cute_dsl_blockscaling_mm",
    "use_cute_dsl_blockscaling_bmm", "disable_flashinfer_sampling", "max_stats_len",
    "layer_wise_benchmarks_config",
))


class _Section:
    """A nested section: keyword arguments with defaults, unknown keys refused as upstream does."""
    FIELDS = {}

    def __init__(self, **kwargs):
        unknown = sorted(set(kwargs) - set(self.FIELDS))
        if unknown:
            raise ValueError("1 validation error for %s\n%s\n  Extra inputs are not permitted"
                             % (type(self).__name__, ", ".join(unknown)))
        for name, default in self.FIELDS.items():
            setattr(self, name, kwargs.get(name, default))
        self._check()

    def _check(self):
        pass

    def to_dict(self):
        return {name: getattr(self, name) for name in self.FIELDS}


class KvCacheConfig(_Section):
    FIELDS = {
        "enable_block_reuse": True, "max_tokens": None, "max_attention_window": None, "sink_token_length": None,
        "free_gpu_memory_fraction": 0.9, "host_cache_size": None, "onboard_blocks": True,
        "cross_kv_cache_fraction": None, "secondary_offload_min_priority": None, "event_buffer_max_size": 0,
        "attention_dp_events_gather_period_ms": 5, "enable_partial_reuse": True, "copy_on_partial_reuse": True,
        "use_uvm": False, "max_gpu_total_bytes": 0, "dtype": "auto", "mamba_ssm_cache_dtype": "auto",
        "tokens_per_block": 32, "use_kv_cache_manager_v2": False, "block_reuse_config": None,
        "max_util_for_resume": None,
    }


class CacheTransceiverConfig(_Section):
    FIELDS = {
        "backend": None, "transceiver_runtime": None, "max_tokens_in_buffer": None, "kv_transfer_timeout_ms": None,
        "kv_transfer_sender_future_timeout_ms": 1000, "kv_cache_bounce_size_mb": None,
    }

    def _check(self):
        if self.backend not in (None, "DEFAULT", "UCX", "NIXL", "MOONCAKE", "MPI"):
            raise ValueError("cache_transceiver_config.backend: unknown backend %r" % (self.backend,))
        if self.transceiver_runtime not in (None, "CPP", "PYTHON"):
            raise ValueError("cache_transceiver_config.transceiver_runtime: expected 'CPP' or 'PYTHON', got %r"
                             % (self.transceiver_runtime,))


class AttentionDpConfig(_Section):
    FIELDS = {
        "enable_balance": False, "timeout_iters": 50, "batching_wait_iters": 10,
        "enable_kv_cache_aware_routing": False, "kv_cache_routing_load_balance_weight": 1.0,
        "kv_cache_routing_match_rate_threshold": 0.1, "kv_cache_routing_fair_share_multiplier": 2.0,
        "kv_cache_routing_cold_start_warmup": False, "kv_cache_routing_account_for_in_transfer": False,
        "kv_cache_routing_conversation_affinity": False, "kv_cache_routing_max_sessions": 65536,
    }


class SchedulerConfig(_Section):
    FIELDS = {"capacity_scheduler_policy": "GUARANTEED_NO_EVICT", "context_chunking_policy": None,
              "dynamic_batch_config": None, "waiting_queue_policy": None}


SECTIONS = {"kv_cache_config": KvCacheConfig, "cache_transceiver_config": CacheTransceiverConfig,
            "attention_dp_config": AttentionDpConfig, "scheduler_config": SchedulerConfig}


def section(name, value):
    """A nested section from a mapping, its object or None (the defaults)."""
    cls = SECTIONS[name]
    if value is None:
        return cls()
    if isinstance(value, cls):
        return value
    if isinstance(value, dict):
        return cls(**value)
    raise ValueError("%s: expected a mapping or %s, got %s" % (name, cls.__name__, type(value).__name__))


def validate(kwargs):
    """The LLM's keyword arguments checked as TorchLlmArgs does: unknown keys raise ValueError."""
    unknown = sorted(set(kwargs) - TORCH_LLM_ARGS)
    if unknown:
        raise ValueError("1 validation error for TorchLlmArgs\n%s\n  Extra inputs are not permitted" % ", ".join(unknown))
    return {name: section(name, kwargs.get(name)) for name in SECTIONS}
