"""Stand-in for tensorrt_llm.conversation_params."""
from dataclasses import dataclass


@dataclass
class ConversationParams:
    conversation_id: str

    def __post_init__(self):
        if self.conversation_id is None or not str(self.conversation_id).strip():
            raise ValueError("conversation_id must be a non-empty string")
        self.conversation_id = str(self.conversation_id).strip()
