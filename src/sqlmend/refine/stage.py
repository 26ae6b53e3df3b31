"""RefineStage: ErrorLLM's error-guided refinement as a pipeline stage (paper §3.3).

For the errors earlier stages found and did not fix: localize them (LocLLM;
static findings come localized), extract each one's subtree, schema subgraph and
evidence (Ext), fill the type's guideline, order the errors by priority, and ask
RefLLM for a rewrite, which passes the guard. A SQL with no detected error is
returned untouched, without a model call.

Models: the llm stage ``refiner`` (RefLLM) and ``localizer`` (LocLLM; the
refiner's model when none is configured for it).
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import Field

from sqlmend.errors import ModelError
from sqlmend.llm.book import CallBook
from sqlmend.refine import guidelines
from sqlmend.refine.extract import exec_summary, extract, nodes, prompt_schema
from sqlmend.refine.localize import detected_types, localize
from sqlmend.refine.refiner import brief, build_messages, rewrite
from sqlmend.stage import StageBase, StageContext, StageSettings
from sqlmend.types import StageTrace


class RefineStage(StageBase):
    """Error-guided refinement (LocLLM → Ext → guideline → priority → RefLLM → guard)."""

    name = "refine"

    class Settings(StageSettings):
        shots: int = Field(1, ge=0, description="few-shot examples per error type in the RefLLM prompt")
        max_errors: int = Field(4, ge=1, description="most errors addressed in one rewrite "
                                                      "(highest priority first)")
        max_tokens: int = Field(192, ge=1, description="most tokens RefLLM generates "
                                                        "(LocLLM gets a third more)")
        priority: list[str] = Field(default_factory=lambda: list(guidelines.DEFAULT_PRIORITY),
                                    description="error families in the order refinement addresses them "
                                                "(ErrorLLM §3.3)")

    def run(self, ctx: StageContext) -> StageTrace:
        """Refine ``ctx.sql`` guided by ``ctx.findings``.

        Args:
            ctx: the stage context.

        Returns:
            The trace: localizations, guidelines, prompts, the candidate, the guard
            verdict, which errors were addressed and, if rejected, why.
        """
        t0 = time.perf_counter()
        trace = StageTrace(stage=self.name, status="skipped")
        types = detected_types(ctx.findings)
        if not types:
            trace.note = "no error detected: SQL returned untouched, no model call"
            return trace
        ref_backend = ctx.backend("refiner")
        if ref_backend is None:
            trace.note = f"no model configured for stage 'refiner' ({len(types)} error(s) left unrefined)"
            trace.detail["errors"] = types
            return trace
        loc_backend = ctx.backend("localizer") or ref_backend
        trace.status = "ran"
        book = CallBook()
        try:
            self._refine(ctx, types, loc_backend, ref_backend, book, trace)
        except ModelError as exc:
            trace.status = "failed"
            trace.note = f"model failed, original kept: {type(exc).__name__}: {exc}"
        book.to_trace(trace)
        trace.seconds = round(time.perf_counter() - t0, 4)
        return trace

    def _refine(self, ctx: StageContext, types: list[str], loc_backend: Any, ref_backend: Any,
                book: CallBook, trace: StageTrace) -> None:
        dialect = ctx.dialect
        tree = ctx.tree()  # None: refine from the text alone (no subtree, whole schema)
        schema = ctx.db.schema()
        all_nodes = nodes(tree, dialect) if tree is not None else []
        result, error = ctx.execute()
        execution = exec_summary(result, error)
        max_tokens = self.settings.max_tokens
        locs = localize(ctx.findings, question=ctx.task.question, evidence=ctx.task.evidence,
                        sql_text=ctx.sql, all_nodes=all_nodes,
                        schema=prompt_schema(schema, ctx.task.question, ctx.sql, ctx.db, dialect),
                        execution=execution, backend=loc_backend, book=book,
                        max_tokens=max_tokens * 4 // 3)
        priority = self.settings.priority
        ordered = guidelines.order([loc.error_type for loc in locs], priority)
        by_type = {loc.error_type: loc for loc in locs}
        briefs = []
        for tid in ordered[: self.settings.max_errors]:
            loc = by_type[tid]
            ext = extract(tid, tree, schema, node_paths=loc.nodes, schema_refs=loc.schema_refs,
                          clauses=guidelines.load(tid).clauses, db=ctx.db,
                          evidence={**loc.evidence, "execution": execution}, dialect=dialect)
            briefs.append(brief(loc, ext))
        trace.detail["localizations"] = [loc.to_dict() for loc in locs]
        trace.detail["order"] = [b.localization.error_type for b in briefs]
        trace.detail["guidelines"] = {b.localization.error_type: b.guideline for b in briefs}
        trace.detail["extracts"] = [b.extract.to_dict() for b in briefs]
        msgs = build_messages(briefs, question=ctx.task.question, evidence=ctx.task.evidence,
                              sql_text=ctx.sql, shots=self.settings.shots)
        proposal = rewrite(ref_backend, msgs, book, max_tokens=max_tokens, sql_schema=schema,
                           sql_original=ctx.sql)
        trace.detail["addressed"] = proposal.addressed
        if proposal.no_change or not proposal.sql:
            trace.note = proposal.note or "the model proposed no SQL; original kept"
            return
        trace.candidate = proposal.sql
        trace.verdict = ctx.guard(proposal.sql)
        if not trace.verdict.accepted:
            trace.detail["rejected"] = trace.verdict.reason
        trace.note = "; ".join(x for x in (proposal.note, trace.verdict.reason) if x)
