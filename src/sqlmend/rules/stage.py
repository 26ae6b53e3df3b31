"""The static stage of the pipeline: run the rules, apply the strict fixes, guard the result.

It follows the stage contract of :mod:`sqlmend.stage` and can be used on its own
(``sqlmend bench static`` does).
Only fixes of findings with effective severity ``strict`` are applied, all in
one engine pass; the candidate then passes :func:`sqlmend.guard.validate`.
A fix that rewrites the whole query (``transpile``: the query read in another
dialect, rule EX04) is applied alone first; the rules then run again on what it
wrote (their fixes were planned on a text no longer there), and that second
round's strict fixes are applied on top. Advisory findings are passed on to
later stages as hints.
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
                trace.candidate = self._rewrite(ctx, fixes, trace)
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

    def _rewrite(self, ctx: StageContext, fixes: list[dict], trace: StageTrace) -> str:
        """The query with the strict fixes applied; a whole-query rewrite first and alone, then the
        strict fixes the rules find on what it wrote (their findings join the trace)."""
        dialect = getattr(ctx.db, "dialect", "sqlite")
        whole = [fx for fx in fixes if fx.get("op") == "transpile"]
        if not whole:
            return engine.apply(ctx.sql, fixes, dialect=dialect)
        first = engine.apply(ctx.sql, whole[:1], dialect=dialect)
        again = RuleContext(ctx.db, first, ctx.task.question, timeout=self.run_settings.timeout)
        more = [f for f in check(ctx.db, first, ctx.task.question, codes=self.settings.codes, context=again)
                if not any(fx.get("op") == "transpile" for fx in f.fixes)]
        trace.findings.extend(more)
        trace.detail["probes"] = trace.detail.get("probes", 0) + again.probe.queries
        second = [fix for f in more if f.severity == "strict" for fix in f.fixes]
        trace.detail["fixes"] = [*whole[:1], *second]
        if not second:
            return first
        try:
            return engine.apply(first, second, dialect=dialect)
        except SqlError as exc:
            trace.note = f"second-round fixes not applied: {exc}"
            trace.detail["fixes"] = whole[:1]
            return first
