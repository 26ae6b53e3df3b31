"""Judge an isolated edit group: is it a repair unit? (MIRA §3.2.2, "Judging the group from evidence")

"A group is accepted as a repair unit only when q_i and objective facts
support that s_val implements the required behavior while s^{¬g} conflicts
with it." Two judges, both dispatching through the kind catalogue
(:mod:`sqlmend.memory.kinds`):

* :func:`judge_mechanical` - no model. It accepts only the mechanical kinds,
  whose facts decide by themselves (each kind's ``judge``): literals rebound
  from values no row stores to values rows store; a literal compared with a
  column that does not store it moved to one that does; a column substitution
  whose new column the question names; a DISTINCT removing duplicate rows; a
  join condition turned into a foreign-key pairing.
* :func:`judge_model` - the general kind: a model reads the question, the pair
  and the facts, may request one bounded read-only probe, and decides.
"""

from __future__ import annotations

from typing import Any

from sqlmend.llm.book import CallBook
from sqlmend.memory import kinds
from sqlmend.memory.isolation import IsolatedGroup
from sqlmend.memory.kinds.base import Judgement

__all__ = ["Judgement", "classify", "judge_mechanical", "judge_model"]


def classify(iso: IsolatedGroup, dialect: str = "sqlite") -> tuple[str, dict[str, Any]]:
    """Recognise the kind of a group, with its binding parameters (:func:`sqlmend.memory.kinds.classify`).

    Args:
        iso: the isolated group.
        dialect: the SQL dialect.

    Returns:
        ``(kind, params)``; kind ``"general"`` when no mechanical kind fits.
    """
    return kinds.classify(iso.group.edits, dialect)


def judge_mechanical(question: str, iso: IsolatedGroup, facts: dict[str, Any],
                     dialect: str = "sqlite") -> Judgement:
    """Accept a group without a model when the facts decide (see module doc).

    Args:
        question: the historical question q_i.
        iso: the isolated group.
        facts: its evidence (:func:`~sqlmend.memory.isolation.collect_evidence`).
        dialect: the SQL dialect.

    Returns:
        The judgement.
    """
    name, p = classify(iso, dialect)
    kind = kinds.get(name)
    if not kind.MECHANICAL:
        return Judgement(False, "not a mechanically decidable repair (a model judge is needed)")
    if facts.get("contrast", {}).get("same_result", True):
        return Judgement(False, "reverting the group does not change the result", name)
    ok, why = kind.judge(question, p, facts)
    return Judgement(ok, why, name, kind.ERROR_TYPE, kind.contract(p) if ok else {}, p)


def judge_model(backend: Any, db: Any, question: str, iso: IsolatedGroup, facts: dict[str, Any],
                usage: CallBook, schema_text: str = "") -> Judgement:
    """Let a model judge a group (:func:`sqlmend.memory.kinds.general.judge`).

    Args:
        backend: the model backend.
        db: the open database (for the probe).
        question: the historical question.
        iso: the isolated group.
        facts: its evidence.
        usage: model usage counters.
        schema_text: the schema, as text.

    Returns:
        The judgement (rejected when the model fails).
    """
    name, params = classify(iso, getattr(db, "dialect", "sqlite"))
    return kinds.general.judge(backend, db, question, iso, facts, usage, name, params, schema_text)
