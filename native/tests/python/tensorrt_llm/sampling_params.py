"""Stand-in for tensorrt_llm.SamplingParams: the fields the Affinity driver sets, and
include_stop_str_in_output, which decides whether a stop token stays in the output
(tensorrt_llm/executor/result.py @ a678b91aafbeff265cd0b764abb59d7def624ac2, _handle_sequence)."""
from dataclasses import dataclass
from typing import List, Optional


@dataclass(slots=True, kw_only=True)
class SamplingParams:
    end_id: Optional[int] = None
    max_tokens: int = 32
    stop_token_ids: Optional[List[int]] = None
    seed: Optional[int] = None
    detokenize: bool = True
    include_stop_str_in_output: bool = False
