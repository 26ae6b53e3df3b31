"""The general kind: a repair no mechanical kind recognises, judged, verified and adapted by the model.

Its three steps are model calls with the prompts ``memory/prompts/judge``,
``activate`` (``select_similar`` without verification) and ``adapt``
(``rewrite_plain`` without local adaptation). Each may need one bounded
read-only probe, run by :func:`~sqlmend.memory.kinds.base.run_probe`. Unlike a
mechanical kind, activation and adaptation take every general candidate of a
task at once: MIRA's solver integrates them into one rewrite (§3.3.3).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from sqlmend.llm.book import CallBook
from sqlmend.memory.kinds.base import CONTRACT_PARTS, Activation, Adaptation, Judgement, run_probe
from sqlmend.memory.modelcall import ask

NAME = "general"
ERROR_TYPE = "clause_error"
MECHANICAL = False
_CONTRACT = CONTRACT_PARTS + ("preserve", "not_applicable")


def classify(edits: list[Any], dialect: str) -> dict[str, Any]:
    """Every group no mechanical kind recognises."""
    return {}


class JudgeAnswer(BaseModel):
    accept: bool = Field(description="true only if the question and the facts show the repair is required")
    probe: str | None = Field(None, description="one read-only SELECT whose answer is still needed, else null")
    error_type: str = Field("clause_error", description="an error type id of the taxonomy")
    applicability: str = ""
    incorrect_behavior: str = ""
    required_behavior: str = ""
    repair_behavior: str = ""
    preserve: list[str] = Field(default_factory=list)
    not_applicable: str = ""
    reason: str = ""


def judge(backend: Any, db: Any, question: str, iso: Any, facts: dict[str, Any], usage: CallBook,
          kind: str = NAME, params: dict[str, Any] | None = None, schema_text: str = "") -> Judgement:
    """Let a model judge a group from the question and the facts, with one optional probe (§3.2.2).

    Args:
        backend: the model backend.
        db: the open database (for the probe).
        question: the historical question.
        iso: the isolated group (:class:`~sqlmend.memory.isolation.IsolatedGroup`).
        facts: its evidence.
        usage: model usage counters.
        kind, params: what classification recognised (recorded on the judgement).
        schema_text: the schema, as text.

    Returns:
        The judgement (rejected when the model fails).
    """
    edits = [e.__dict__ for e in iso.group.edits]
    fields = dict(question=question, schema=schema_text, reverted=iso.reverted_sql, repair=iso.repair_sql,
                  edits=edits, facts=facts, probe="none")
    answer = ask(backend, "judge", JudgeAnswer, usage, "judge", **fields)
    if answer is not None and answer.probe and not answer.accept:
        fields["probe"] = run_probe(db, answer.probe)
        answer = ask(backend, "judge", JudgeAnswer, usage, "judge", **fields)
    if answer is None:
        return Judgement(False, "model judge gave no usable answer", kind, judged_by="model")
    contract = {k: getattr(answer, k) for k in _CONTRACT}
    return Judgement(answer.accept, answer.reason or "model judge", kind, answer.error_type, contract,
                     params or {}, judged_by="model")


class Verdict(BaseModel):
    item: str = Field(description="the item id")
    activate: bool = Field(description="true only if the task needs the behaviour AND the SQL shows the violation")
    reason: str = ""
    binding: str = Field("", description="where and how the item applies to the current SQL")


class ActivationAnswer(BaseModel):
    probe: str | None = Field(None, description="one read-only SELECT still needed, else null")
    verdicts: list[Verdict] = Field(default_factory=list)


def activate(backend: Any, db: Any, question: str, current_sql: str, candidates: list[Any],
             observations: list[dict[str, Any]], usage: CallBook, verify: bool = True,
             schema_text: str = "") -> list[Activation]:
    """Let the model verify candidates against q, s_cur and the observations, with one probe (§3.3.2).

    Args:
        backend: the chat backend.
        db: the open database.
        question: q.
        current_sql: s_cur.
        candidates: the retrieved items.
        observations: the automatic observations.
        usage: model usage counters.
        verify: False: the ablation "similarity-only selection" (no contracts, no
            database verification, no probe).
        schema_text: the schema as text.

    Returns:
        One activation per candidate.
    """
    views = [c.item.online_view() | {"channel": c.channel} for c in candidates]
    name = "activate" if verify else "select_similar"
    fields = dict(question=question, sql=current_sql, schema=schema_text, items=views,
                  observations=observations if verify else [], probe="none")
    answer = ask(backend, name, ActivationAnswer, usage, **fields)
    if verify and answer is not None and answer.probe:
        fields["probe"] = run_probe(db, answer.probe)
        answer = ask(backend, name, ActivationAnswer, usage, **fields)
    decided = {v.item: v for v in (answer.verdicts if answer else [])}
    out = []
    for c in candidates:
        v = decided.get(c.item.id)
        out.append(Activation(c, bool(v and v.activate), v.reason if v else "no verdict",
                              {"binding": v.binding} if v else {}))
    return out


class Rewrite(BaseModel):
    sql: str = Field(description="the complete rewritten SQL")
    applied: list[str] = Field(default_factory=list, description="ids of the items realised")


def adapt(backend: Any, question: str, current_sql: str, activations: list[Activation],
          observations: list[dict[str, Any]], usage: CallBook, local: bool = True,
          schema_text: str = "") -> Adaptation:
    """Let the model integrate the activated items into one rewrite (§3.3.3).

    Args:
        backend: the chat backend.
        question: q.
        current_sql: s_cur.
        activations: the activated items.
        observations: the current database observations.
        usage: model usage counters.
        local: False: the "w/o target local adaptation" ablation - the items are
            passed without bindings or what to modify and preserve.
        schema_text: the schema as text.

    Returns:
        The adaptation.
    """
    if local:
        items = [a.candidate.item.online_view() | {"binding": a.binding, "why_active": a.reason}
                 for a in activations]
        name = "adapt"
    else:
        items = [{"id": a.candidate.item.id, "repair": a.candidate.item.contract.repair_behavior}
                 for a in activations]
        name = "rewrite_plain"
    answer = ask(backend, name, Rewrite, usage, question=question, sql=current_sql, schema=schema_text,
                 items=items, observations=observations)
    if answer is None or not answer.sql.strip():
        return Adaptation(None, "none", note="model gave no usable rewrite")
    return Adaptation(answer.sql.strip(), "model", answer.applied or [a.candidate.item.id for a in activations])
