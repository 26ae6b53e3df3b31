"""Repair recovery: a validated repair SQL anchored to the wrong SQL (MIRA §3.2.1).

"At round t, the repair model starts from s- and produces a complete candidate
s^(t). [...] MIRA executes the candidate on D and compares its result with
that of s+. Execution errors or residual result differences are returned in
the next round. The first candidate whose execution result matches that of s+
becomes the validated repair SQL s_val." - "If s- is not executable, already
matches the reference result, or no candidate matches within the repair
budget, the historical correction produces no memory item."

When the corrected SQL s+ already is a small edit of s- (at most
``max_direct_edits`` AST edits), it is taken directly as s_val: no model call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from sqlmend.errors import SqlmendError
from sqlmend.guard import same_result
from sqlmend.llm.book import CallBook
from sqlmend.memory.edits import extract_edits
from sqlmend.memory.modelcall import ask
from sqlmend.types import ExecResult, Schema


@dataclass
class Recovery:
    """The outcome of repair recovery for one historical correction."""

    repair_sql: str | None  # s_val; None when no item can come from this correction
    how: str  # "direct" | "model" | "none"
    reason: str
    rounds: int = 0
    usage: CallBook = field(default_factory=lambda: CallBook(keep_prompts=False))


class Proposal(BaseModel):
    sql: str = Field(description="the complete repaired SQL, starting from the incorrect SQL")


def _run(db: Any, text: str, timeout: float) -> tuple[ExecResult | None, str | None]:
    try:
        return db.execute(text, timeout=timeout), None
    except SqlmendError as e:
        return None, str(e) or type(e).__name__


def _ordered(text: str) -> bool:
    return " order by " in " ".join(text.lower().split())


def _difference(cand: ExecResult, ref: ExecResult) -> str:
    ref_rows, cand_rows = set(map(tuple, ref.rows)), set(map(tuple, cand.rows))
    return (f"{len(cand.columns)} columns vs {len(ref.columns)} expected; {len(cand.rows)} rows vs "
            f"{len(ref.rows)}; missing rows e.g. {sorted(map(str, ref_rows - cand_rows))[:3]}; "
            f"extra rows e.g. {sorted(map(str, cand_rows - ref_rows))[:3]}")


def recover(db: Any, question: str, wrong_sql: str, corrected_sql: str, schema: Schema | None = None,
            backend: Any = None, budget: int = 3, max_direct_edits: int = 4,
            timeout: float = 30.0, schema_text: str = "") -> Recovery:
    """Recover a validated repair SQL for one historical correction (§3.2.1).

    Args:
        db: the open database.
        question: the historical question q_i.
        wrong_sql: the historical incorrect SQL s-.
        corrected_sql: the confirmed correction s+ (offline reference only).
        schema: the database schema (for the normalized diff).
        backend: a model backend for proposals; None: only direct recovery.
        budget: most model rounds.
        max_direct_edits: s+ is taken directly when it is at most this many edits from s-.
        timeout: seconds per execution.
        schema_text: the schema as text, for the model.

    Returns:
        The recovery; ``repair_sql`` is None with the reason when there is none.
    """
    dialect = getattr(db, "dialect", "sqlite")
    wrong, err = _run(db, wrong_sql, timeout)
    if wrong is None:
        return Recovery(None, "none", f"incorrect SQL is not executable: {err}")
    ref, err = _run(db, corrected_sql, timeout)
    if ref is None:
        return Recovery(None, "none", f"corrected SQL is not executable: {err}")
    if same_result(wrong, ref, ordered=_ordered(corrected_sql)):
        return Recovery(None, "none", "incorrect SQL already matches the reference result")
    try:
        n_edits = len(extract_edits(wrong_sql, corrected_sql, schema=schema, dialect=dialect))
    except SqlmendError as e:
        n_edits, reason = None, f"cannot diff: {e}"
    else:
        reason = f"corrected SQL is {n_edits} edits from the incorrect SQL"
    if n_edits is not None and 0 < n_edits <= max_direct_edits:
        return Recovery(corrected_sql, "direct", reason)
    if backend is None:
        return Recovery(None, "none", f"{reason} (> {max_direct_edits}) and no model configured")
    usage, feedback = CallBook(keep_prompts=False), "none yet"
    for t in range(1, budget + 1):
        # the repair's FROM: the incorrect SQL's or the correction's tables, give or take one
        answer = ask(backend, "recover", Proposal, usage, "recovery", sql_schema=schema,
                     sql_original=[wrong_sql, corrected_sql], question=question, schema=schema_text,
                     wrong=wrong_sql, reference=corrected_sql, feedback=feedback)
        if answer is None:
            feedback = "the previous answer was not valid JSON with a 'sql' field"
            continue
        cand, err = _run(db, answer.sql, timeout)
        if cand is None:
            feedback = f"candidate {answer.sql!r} failed to execute: {err}"
        elif same_result(cand, ref, ordered=_ordered(corrected_sql)):
            return Recovery(answer.sql, "model", f"candidate of round {t} matches the reference", t, usage)
        else:
            feedback = f"candidate {answer.sql!r} differs from the reference: {_difference(cand, ref)}"
    return Recovery(None, "none", f"no candidate matched within {budget} rounds", budget, usage)
