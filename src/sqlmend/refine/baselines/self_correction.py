"""Vanilla self-correction (Huang et al., ICLR 2024): review your answer and improve it."""

from __future__ import annotations

from sqlmend.llm import prompts
from sqlmend.refine.baselines.base import PromptBaseline
from sqlmend.stage import StageContext


class SelfCorrectionStage(PromptBaseline):
    """Always asks the model to review and improve the SQL, with no error signal."""

    name = "self-correction"
    prompt = "self-correction"
    rounds = 1

    def messages(self, ctx: StageContext, sql_text: str, fb: str) -> list[dict[str, str]]:
        """The original generation turn, the SQL as the model's own answer, then the review."""
        p = self._prompt()
        values = self._values(ctx, sql_text, fb)
        msgs = prompts.messages(p, **values)
        msgs.append({"role": "assistant", "content": prompts.render(p["assistant"], **values).strip()})
        msgs.append({"role": "user", "content": " ".join(p["review"].split())})
        return msgs
