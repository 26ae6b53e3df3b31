"""The shared loop of the prompted refinement baselines.

A baseline stage decides whether to act (its *trigger*: always, or only on an
execution failure), asks the model for a fixed SQL for up to ``rounds`` rounds
(each round may see the execution feedback of the previous SQL), and passes the
last SQL it got through the guard, like every rewriting stage. Prompts are data
files in ``baselines/prompts/``.
"""

from __future__ import annotations

import json
import time
from typing import Any

from pydantic import Field

from sqlmend.errors import ModelError
from sqlmend.llm import prompts
from sqlmend.llm.book import CallBook
from sqlmend.refine.chat import sql_from_text
from sqlmend.refine.extract import exec_summary, schema_text
from sqlmend.stage import StageBase, StageContext, StageSettings
from sqlmend.types import ExecResult, StageTrace

def feedback(result: ExecResult | None, error: str | None) -> str:
    """Execution feedback as a model reads it: the error, or the columns and first rows."""
    if error:
        return f"error: {error}"
    if result is not None and result.empty:
        return "the query executed and returned no rows"
    return json.dumps(exec_summary(result, None), default=str, ensure_ascii=False)


class BaselineSettings(StageSettings):
    """The options of every prompted baseline (``--option refine.KEY=VALUE``)."""

    rounds: int | None = Field(None, ge=1, description="most model rounds (default: the baseline's own)")
    max_tokens: int | None = Field(None, ge=1, description="most tokens per answer (default: the baseline's own)")


class PromptBaseline(StageBase):
    """A refinement baseline driven by one prompt file.

    Subclasses set ``name``, ``prompt`` (a file in ``baselines/prompts``) and
    ``rounds``, and may override :meth:`trigger`, :meth:`messages` and :meth:`done`.
    """

    name = "baseline"
    Settings = BaselineSettings
    prompt = ""
    rounds = 1
    max_tokens = 256  # per answer (the max_tokens setting overrides)
    model_stage = "baseline"  # the llm stage whose model it uses

    def __init__(self, settings: BaselineSettings | None = None, run: Any = None):
        super().__init__(settings, run)
        if self.settings.rounds is not None:
            self.rounds = self.settings.rounds
        if self.settings.max_tokens is not None:
            self.max_tokens = self.settings.max_tokens

    # --- what a baseline may change ---------------------------------------
    def trigger(self, ctx: StageContext, result: ExecResult | None, error: str | None) -> str | None:
        """Why this baseline acts on ``ctx.sql`` (None: it does not, and makes no call)."""
        return "always (no detection before correction)"

    def messages(self, ctx: StageContext, sql_text: str, fb: str) -> list[dict[str, str]]:
        """The conversation of one round."""
        return prompts.messages(self._prompt(), **self._values(ctx, sql_text, fb))

    def done(self, answer: str, new_sql: str, ctx: StageContext) -> bool:
        """Whether to stop after this round (default: after every round)."""
        return True

    # --- the loop ---------------------------------------------------------
    def _prompt(self) -> dict[str, str]:
        return prompts.load("sqlmend.refine.baselines", self.prompt)

    def _values(self, ctx: StageContext, sql_text: str, fb: str) -> dict[str, Any]:
        return {"question": ctx.task.question, "evidence": ctx.task.evidence or "(none)",
                "schema": schema_text(ctx.db.schema()), "sql": sql_text, "feedback": fb}

    def run(self, ctx: StageContext) -> StageTrace:
        """Run the baseline on ``ctx.sql``; the candidate passes the guard.

        Args:
            ctx: the stage context.

        Returns:
            The trace: the trigger, prompts, rounds, candidate and guard verdict.
        """
        t0 = time.perf_counter()
        trace = StageTrace(stage=self.name, status="skipped")
        result, error = ctx.execute()
        why = self.trigger(ctx, result, error)
        if why is None:
            trace.note = "trigger not met (executes and returns rows): no model call"
            return trace
        backend = ctx.backend(self.model_stage)
        if backend is None:
            trace.note = f"no model configured for stage {self.model_stage!r}"
            return trace
        trace.status = "ran"
        trace.detail["trigger"] = why
        book = CallBook()
        current, fb = ctx.sql, feedback(result, error)
        try:
            for i in range(self.rounds):
                res = book.ask(backend, self.messages(ctx, current, fb), stage=self.model_stage,
                               role=f"{self.name} round {i + 1}",
                               max_tokens=self.max_tokens)
                new_sql = self.answer_sql(res.text)
                stop = self.done(res.text, new_sql, ctx)
                if new_sql and new_sql != current:
                    current = new_sql
                    fb = self._feedback_of(ctx, current)
                if stop or not new_sql:
                    break
        except ModelError as exc:
            trace.status = "failed"
            trace.note = f"model failed, original kept: {type(exc).__name__}: {exc}"
        if current != ctx.sql:
            trace.candidate = current
            trace.verdict = ctx.guard(current)
            trace.note = trace.note or trace.verdict.reason
        elif trace.status == "ran":
            trace.note = "the model kept the SQL"
        book.to_trace(trace)
        trace.seconds = round(time.perf_counter() - t0, 4)
        return trace

    def answer_sql(self, text: str) -> str:
        """The SQL in a model answer ("" when it has none)."""
        return sql_from_text(text)

    @staticmethod
    def _feedback_of(ctx: StageContext, sql_text: str) -> str:
        try:
            return feedback(ctx.db.execute(sql_text, timeout=ctx.run.timeout,
                                           max_rows=20), None)
        except Exception as exc:  # the engine's refusal is the feedback
            return feedback(None, getattr(exc, "engine_message", None) or str(exc))
