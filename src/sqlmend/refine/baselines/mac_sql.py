"""MAC-SQL's Refiner (Wang et al., COLING 2025): acts only on an execution error or no rows."""

from __future__ import annotations

from sqlmend.refine.baselines.base import PromptBaseline
from sqlmend.stage import StageContext
from sqlmend.types import ExecResult


class MacSqlStage(PromptBaseline):
    """Refines a SQL that fails or returns nothing, until the new SQL executes with rows."""

    name = "mac-sql"
    prompt = "mac-sql"
    rounds = 3

    def trigger(self, ctx: StageContext, result: ExecResult | None, error: str | None) -> str | None:
        """MAC-SQL's trigger: an execution error or an empty result."""
        if error:
            return f"execution error: {error}"
        if result is not None and result.empty:
            return "empty result"
        return None

    def done(self, answer: str, new_sql: str, ctx: StageContext) -> bool:
        """Stop once the new SQL executes and returns rows."""
        if not new_sql:
            return True
        try:
            return not ctx.db.execute(new_sql, timeout=30.0, max_rows=1).empty
        except Exception:  # still failing: another round
            return False
