"""RefLLM: rewrite a SQL guided by its ordered, localized errors (ErrorLLM §3.3).

``x^(Ref) = [(τ^(λ), G^(λ), g_λ[*], ε^(λ))]`` for the detected types in priority
order: for each error, the located subtree, the schema subgraph, the filled
guideline and the evidence; few-shot examples of the same types come first. The
model answers JSON (``sql``, ``addressed``, ``no_change``) and may say that no
change is needed. Its SQL is only a candidate: the stage passes it to the guard.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from sqlmend import taxonomy
from sqlmend.errors import ModelError, StructuredOutputError
from sqlmend.llm import prompts
from sqlmend.llm.book import CallBook
from sqlmend.refine import guidelines
from sqlmend.refine.chat import sql_from_text
from sqlmend.refine.extract import Extract
from sqlmend.refine.localize import Localization


class RewriteAnswer(BaseModel):
    """RefLLM's answer."""

    sql: str = Field("", description="the corrected SQL, one SQLite SELECT statement")
    addressed: list[str] = Field(default_factory=list, description="error types fixed")
    no_change: bool = Field(False, description="true when the SQL is already correct")


@dataclass
class Rewrite:
    """What the refiner proposes."""

    sql: str = ""
    addressed: list[str] = field(default_factory=list)
    no_change: bool = False
    note: str = ""


@dataclass
class ErrorBrief:
    """One error as RefLLM sees it: localization, extraction and filled guideline."""

    localization: Localization
    extract: Extract
    guideline: str


def brief(loc: Localization, ext: Extract) -> ErrorBrief:
    """Fill the type's guideline with the localized fields (``g_λ[*]``)."""
    return ErrorBrief(loc, ext, guidelines.fill(guidelines.load(loc.error_type), loc.fields))


def _examples(type_ids: list[str], shots: int) -> str:
    if shots <= 0:
        return ""
    p = prompts.load("sqlmend.refine", "refine")
    out = []
    for tid in type_ids:
        g = guidelines.load(tid)
        for ex in g.examples[:shots]:
            out.append(prompts.render(p["example"], error_type=tid, question=ex["question"],
                                      sql=ex["sql"], guideline=guidelines.fill(g, ex.get("fields", {})),
                                      fixed=ex["fixed"]).strip())
    return "\n\n".join(out) + ("\n" if out else "")


def _error_block(rank: int, b: ErrorBrief) -> str:
    p = prompts.load("sqlmend.refine", "refine")
    ext = b.extract
    where = "; ".join(f"{n.path}: {n.sql}" for n in ext.subtree) or "(whole query)"
    ev = dict(ext.evidence)
    if ext.linked_values:
        ev["linked_values"] = ext.linked_values
    return prompts.render(p["error"], rank=rank, error_type=b.localization.error_type,
                          source=b.localization.source,
                          description=taxonomy.get(b.localization.error_type).description,
                          nodes=where, schema=ext.schema.replace("\n", "\n             "),
                          guideline=b.guideline,
                          evidence=json.dumps(ev, default=str, ensure_ascii=False)[:600]).rstrip()


def build_messages(briefs: list[ErrorBrief], *, question: str, evidence: str, sql_text: str,
                   shots: int = 1) -> list[dict[str, str]]:
    """The RefLLM conversation for errors already in priority order.

    Args:
        briefs: the errors, ordered.
        question: the task's question.
        evidence: the task's evidence, may be "".
        sql_text: the SQL to fix.
        shots: few-shot examples per error type (0 for none).

    Returns:
        Chat messages.
    """
    types = [b.localization.error_type for b in briefs]
    return prompts.messages(prompts.load("sqlmend.refine", "refine"), examples=_examples(types, shots),
                            question=question, evidence=evidence or "(none)", sql=sql_text,
                            errors="\n".join(_error_block(i + 1, b) for i, b in enumerate(briefs)))


def rewrite(backend: Any, messages: list[dict[str, str]], book: CallBook,
            stage: str = "refiner", max_tokens: int = 192, sql_schema: Any = None,
            sql_original: str | None = None) -> Rewrite:
    """Ask RefLLM for the rewrite.

    A structured answer that does not validate is read as text once more (the SQL
    in it, if any): the guard judges it either way.

    Args:
        backend: the RefLLM backend.
        messages: from :func:`build_messages`.
        book: where the call is recorded.
        stage: the stage name logged with the call.
        max_tokens: most tokens RefLLM may generate (a SQL in JSON is short).
        sql_schema: the database's ``types.Schema``: a local model then writes the SQL
            under the grammar of one SELECT over its tables and columns.
        sql_original: the SQL being rewritten: the grammar's FROM-scopes are its tables,
            give or take one, and the SQL names only the chosen scope's columns.

    Returns:
        The proposed :class:`Rewrite` (``sql`` "" when the model gave none).

    Raises:
        ModelError: the backend failed (not garbage: that gives an empty rewrite).
    """
    try:
        res = book.ask(backend, messages, stage=stage, schema=RewriteAnswer, role="refine",
                       max_tokens=max_tokens, sql_schema=sql_schema, sql_original=sql_original)
    except StructuredOutputError as exc:
        text = sql_from_text(exc.raw or "")
        return Rewrite(sql=text, note="answer was not valid JSON"
                       + ("; SQL taken from its text" if text else "; no SQL in it"))
    ans = res.parsed
    if isinstance(ans, dict):
        ans = RewriteAnswer.model_validate(ans)
    if not isinstance(ans, RewriteAnswer):
        raise ModelError("refiner answer has no parsed object")
    if ans.no_change:
        return Rewrite(no_change=True, note="the model says no change is needed")
    return Rewrite(sql=sql_from_text(ans.sql) or ans.sql.strip(), addressed=list(ans.addressed))
