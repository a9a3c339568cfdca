"""Stand-in for tensorrt_llm.disaggregated_params: the fields of the LLM-API dataclass as upstream
has them (NVIDIA/TensorRT-LLM tensorrt_llm/disaggregated_params.py @
b828daced8dcf69000b172b183b5ff45e5a158d1): besides the four the C++ transceiver needs
(first_gen_tokens, ctx_request_id, opaque_state, ctx_dp_rank), disagg_request_id and
ctx_info_endpoint, which the Python KV-transfer path needs on the generation request."""
from dataclasses import dataclass
from typing import Any, Dict, List, Optional


@dataclass(slots=True, kw_only=True)
class DisaggregatedParams:
    request_type: Optional[str] = None
    first_gen_tokens: Optional[List[int]] = None
    first_gen_log_probs: Optional[List] = None
    first_gen_logits: Optional[List] = None
    ctx_request_id: Optional[int] = None
    opaque_state: Optional[bytes] = None
    draft_tokens: Optional[List[int]] = None
    disagg_request_id: Optional[int] = None
    ctx_dp_rank: Optional[int] = None
    ctx_info_endpoint: Optional[str] = None
    schedule_style: Optional[int] = None
    multimodal_embedding_handles: Optional[List[Dict[str, Any]]] = None
    multimodal_hashes: Optional[List[List[int]]] = None

    def __post_init__(self):
        if self.request_type not in (None, "context_only", "generation_only", "context_and_generation"):
            raise ValueError("unknown request_type %r" % (self.request_type,))
