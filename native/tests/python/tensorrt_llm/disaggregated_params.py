"""Stand-in for tensorrt_llm.disaggregated_params (the fields of the LLM-API dataclass)."""
from dataclasses import dataclass
from typing import List, Optional


@dataclass(slots=True, kw_only=True)
class DisaggregatedParams:
    request_type: Optional[str] = None
    first_gen_tokens: Optional[List[int]] = None
    ctx_request_id: Optional[int] = None
    opaque_state: Optional[bytes] = None
    draft_tokens: Optional[List[int]] = None
    disagg_request_id: Optional[int] = None
    ctx_dp_rank: Optional[int] = None
    ctx_info_endpoint: Optional[str] = None

    def __post_init__(self):
        if self.request_type not in (None, "context_only", "generation_only", "context_and_generation"):
            raise ValueError("unknown request_type %r" % (self.request_type,))
