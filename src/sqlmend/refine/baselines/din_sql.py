"""DIN-SQL's self-correction module with the gentle prompt (Pourreza and Rafiei, NeurIPS 2023)."""

from __future__ import annotations

from sqlmend.refine.baselines.base import PromptBaseline
from sqlmend.refine.chat import sql_from_text


class DinSqlStage(PromptBaseline):
    """Always asks for a fixed query ("if there are no issues, return it as is")."""

    name = "din-sql"
    prompt = "din-sql"
    rounds = 1

    def answer_sql(self, text: str) -> str:
        """The prompt ends in ``SELECT``: an answer that continues it gets the keyword back."""
        found = sql_from_text(text)
        if found:
            return found
        body = " ".join((text or "").split()).split(";")[0].strip()
        return f"SELECT {body}" if body else ""
