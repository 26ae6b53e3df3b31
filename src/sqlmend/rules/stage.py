"""The static stage of the pipeline: run the rules, apply the strict fixes, guard the result.

It follows the stage contract of docs/architecture.md (``name``, ``run(ctx) ->
StageTrace``) and can be used on its own (``sqlmend bench static`` does).
Only fixes of findings with effective severity ``strict`` are applied, all in
one engine pass; the candidate then passes :func:`sqlmend.guard.validate`.
Advisory findings are passed on to later stages as hints.
"""

from __future__ import annotations

import time

from sqlmend import guard
from sqlmend.errors import SqlError
from sqlmend.rules import RuleContext, check, engine
from sqlmend.types import StageContext, StageTrace


class StaticStage:
    """Static detection and proven repairs (ErrorLLM §3.2 static detection; MIRA §3.3.3 guard).

    Args:
        timeout: seconds the query, each probe and the guard's executions may run.
        apply_fixes: apply strict fixes (False: detect only).
        codes: run only these rules (all when omitted).
    """

    name = "static"

    def __init__(self, timeout: float = 10.0, apply_fixes: bool = True,
                 codes: list[str] | None = None):
        self.timeout = timeout
        self.apply_fixes = apply_fixes
        self.codes = codes

    def run(self, ctx: StageContext) -> StageTrace:
        """Run the stage on one task.

        Args:
            ctx: the stage context (task, open database, current SQL, ...).

        Returns:
            The trace: findings, the candidate rewrite and the guard's verdict.
        """
        start = time.perf_counter()
        rule_ctx = RuleContext(ctx.db, ctx.sql, ctx.task.question, timeout=self.timeout,
                               exec_result=ctx.exec_result, exec_error=ctx.exec_error)
        findings = check(ctx.db, ctx.sql, ctx.task.question, codes=self.codes, context=rule_ctx)
        trace = StageTrace(stage=self.name, status="ran", findings=findings)
        trace.detail["probes"] = rule_ctx.probe.queries
        fixes = [fix for f in findings if f.severity == "strict" for fix in f.fixes]
        if self.apply_fixes and fixes:
            trace.detail["fixes"] = fixes
            try:
                trace.candidate = engine.apply(ctx.sql, fixes, dialect=rule_ctx.dialect)
            except SqlError as exc:  # FixError, or a tree the engine cannot write back
                trace.note = f"fixes not applied: {exc}"
            else:
                full = rule_ctx.exec_result  # capped: the guard re-runs a truncated input
                trace.verdict = guard.validate(
                    ctx.db, ctx.sql, trace.candidate, timeout=self.timeout,
                    original_result=None if full is None or full.truncated else full,
                    original_error=rule_ctx.exec_error)
        strict = sum(f.severity == "strict" for f in findings)
        summary = f"{len(findings)} finding(s), {strict} strict"
        if trace.verdict is not None:
            summary += f"; rewrite {'accepted' if trace.verdict.accepted else 'rejected'}: " \
                       f"{trace.verdict.reason}"
        trace.note = f"{trace.note}; {summary}" if trace.note else summary
        trace.seconds = time.perf_counter() - start
        return trace
