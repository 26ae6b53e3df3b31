"""The static stage of the pipeline: run the rules, apply the strict fixes, guard the result.

It follows the stage contract of :mod:`sqlmend.stage` and can be used on its own
(``sqlmend bench static`` does).
Only fixes of findings with effective severity ``strict`` are applied, all in
one engine pass; the candidate then passes :func:`sqlmend.guard.validate`.
Advisory findings are passed on to later stages as hints.
"""

from __future__ import annotations

import time

from pydantic import Field

from sqlmend.errors import SqlError
from sqlmend.rules import RuleContext, check, engine
from sqlmend.stage import StageBase, StageContext, StageSettings
from sqlmend.types import StageTrace


class StaticStage(StageBase):
    """Static detection and proven repairs (ErrorLLM §3.2 static detection; MIRA §3.3.3 guard).

    The query, each probe and the guard's executions run under the run's time
    limit (``RunSettings.timeout``; probes at most 5 s each).
    """

    name = "static"

    class Settings(StageSettings):
        apply_fixes: bool = Field(True, description="apply strict fixes (False: detect only)")
        codes: list[str] | None = Field(None, description="run only these rules (default: all)")

    def run(self, ctx: StageContext) -> StageTrace:
        """Run the stage on one task.

        Args:
            ctx: the stage context (task, open database, current SQL, ...).

        Returns:
            The trace: findings, the candidate rewrite and the guard's verdict.
        """
        start = time.perf_counter()
        result, error = ctx.execute()
        rule_ctx = RuleContext(ctx.db, ctx.sql, ctx.task.question, timeout=self.run_settings.timeout,
                               exec_result=result, exec_error=error)
        findings = check(ctx.db, ctx.sql, ctx.task.question, codes=self.settings.codes, context=rule_ctx)
        trace = StageTrace(stage=self.name, status="ran", findings=findings)
        trace.detail["probes"] = rule_ctx.probe.queries
        bounded = [*rule_ctx.bounded, *rule_ctx.probe.bounded]
        if bounded:  # a check answered from a sample, or a probe stopped at its limit: said, not hidden
            trace.detail["bounded"] = bounded
        fixes = [fix for f in findings if f.severity == "strict" for fix in f.fixes]
        if self.settings.apply_fixes and fixes:
            trace.detail["fixes"] = fixes
            try:
                trace.candidate = engine.apply(ctx.sql, fixes, dialect=rule_ctx.dialect)
            except SqlError as exc:  # FixError, or a tree the engine cannot write back
                trace.note = f"fixes not applied: {exc}"
            else:
                trace.verdict = ctx.guard(trace.candidate)
        strict = sum(f.severity == "strict" for f in findings)
        summary = f"{len(findings)} finding(s), {strict} strict"
        if trace.verdict is not None:
            summary += f"; rewrite {trace.verdict.describe()}"
        trace.note = f"{trace.note}; {summary}" if trace.note else summary
        trace.seconds = time.perf_counter() - start
        return trace
