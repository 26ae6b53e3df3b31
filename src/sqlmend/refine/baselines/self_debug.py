"""Self-debugging with execution feedback (Chen et al., ICLR 2024)."""

from __future__ import annotations

from sqlmend.refine.baselines.base import PromptBaseline
from sqlmend.stage import StageContext


class SelfDebugStage(PromptBaseline):
    """Shows the model what the SQL returned; it explains, judges and fixes, for a few rounds."""

    name = "self-debug"
    prompt = "self-debug"
    rounds = 3

    def done(self, answer: str, new_sql: str, ctx: StageContext) -> bool:
        """Stop when the model says the SQL is correct or proposes none."""
        marker = self._prompt().get("correct_marker", "The SQL is correct")
        return marker.lower() in (answer or "").lower() or not new_sql
