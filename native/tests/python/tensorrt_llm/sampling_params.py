"""Stand-in for tensorrt_llm.SamplingParams: the fields the Affinity driver sets."""
from dataclasses import dataclass
from typing import List, Optional


@dataclass
class SamplingParams:
    max_tokens: int = 32
    end_id: Optional[int] = None
    stop_token_ids: Optional[List[int]] = None
    seed: Optional[int] = None
