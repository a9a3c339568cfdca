"""Stand-in for tensorrt_llm.scheduling_params (release with sub-agent affinity, PR #18684)."""
from dataclasses import dataclass
from typing import List, Optional, Tuple


@dataclass(slots=True, kw_only=True)
class SchedulingParams:
    attention_dp_rank: Optional[int] = None
    attention_dp_relax: bool = True
    agent_hierarchy: Optional[List[Tuple[str, int]]] = None
    subagent_affinity_id: Optional[str] = None
