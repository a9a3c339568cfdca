"""Stand-in for tensorrt_llm.SamplingParams: the fields the Affinity driver sets."""
from dataclasses import dataclass
from typing import List, Optional


@dataclass(slots=True, kw_only=True)
class SamplingParams:
    end_id: Optional[int] = None
    max_tokens: int = 32
    stop_token_ids: Optional[List[int]] = None
    seed: Optional[int] = None
    detokenize: bool = True
