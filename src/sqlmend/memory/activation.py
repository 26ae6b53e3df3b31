"""Evidence-verified memory activation (MIRA §3.3.2).

"The current task must require the behavior recorded by the item, and the
current SQL must exhibit its recorded violation. The item is activated only
when both conditions hold." MIRA first inspects, automatically, the string
predicates and scalar transformations already present in the current SQL
(:func:`observe`); one bounded read-only probe may add one more fact.

Mechanical items are verified without a model, each by its kind's target local
check (``activate`` of :mod:`sqlmend.memory.kinds`); every other item needs the
model verifier (:func:`activate_model`).
"""

from __future__ import annotations

from typing import Any

from sqlmend import sql
from sqlmend.errors import SqlmendError
from sqlmend.llm.book import CallBook
from sqlmend.memory import kinds
from sqlmend.memory.kinds.base import Activation, Online, count_matches, stored_variants
from sqlmend.memory.retrieval import Candidate

__all__ = ["Activation", "activate_model", "check_mechanical", "observe"]

ast = sql.ast

#: Predicates whose literal is checked against the stored values.
_STRING_PREDICATES = (ast.EQ, ast.NEQ, ast.Like, ast.ILike)


def observe(db: Any, current_sql: str, tree: Any = None) -> list[dict[str, Any]]:
    """Automatic observations of the current SQL's string predicates and scalar transforms (§3.3.2).

    Args:
        db: the open database.
        current_sql: s_cur.
        tree: ``current_sql`` already parsed (read, not changed), to spare a parse.

    Returns:
        One observation per string comparison: column, operator, literal, rows it
        matches, stored case/space variants; and one per scalar function on a column.
    """
    if tree is None:
        try:
            tree = sql.parse(current_sql, dialect=getattr(db, "dialect", "sqlite"))
        except SqlmendError:
            return []
    resolver = sql.Resolver(tree)
    out = []
    for pred in tree.find_all(*_STRING_PREDICATES):
        col, lit = pred.this, pred.expression
        if isinstance(col, ast.Column) and isinstance(lit, ast.Literal) and lit.is_string:
            name = resolver.column_name(col)
            if "." not in name:
                continue
            entry = {"column": name, "op": type(pred).__name__, "literal": lit.this}
            if isinstance(pred, ast.EQ):
                entry["rows"] = count_matches(db, name, lit.this)
                entry["variants"] = [str(v) for v in stored_variants(db, name, lit.this)]
            out.append(entry)
    for fn in tree.find_all(ast.Func):
        if not isinstance(fn, ast.AggFunc) and isinstance(fn.this, ast.Column):
            out.append({"transform": type(fn).__name__.lower(), "column": resolver.column_name(fn.this)})
    return out


def check_mechanical(cand: Candidate, question: str, keys: set[str], observations: list[dict[str, Any]],
                     db: Any, current_sql: str, result: Any = None, verify: bool = True) -> Activation:
    """Run a mechanical item's target local check on the current task (§3.3.2), its kind's ``activate``.

    Args:
        cand: the retrieved candidate.
        question: the current question q.
        keys: K(s_cur).
        observations: :func:`observe`'s output for s_cur.
        db: the open database.
        current_sql: s_cur.
        result: s_cur's execution result, when known.
        verify: False skips the evidence (the "w/o evidence-verified activation"
            ablation): an item is activated whenever it can be bound.

    Returns:
        The activation decision with the binding.
    """
    kind = kinds.get(cand.item.kind)
    if not kind.MECHANICAL:
        return Activation(cand, False, "not mechanical: needs the model verifier")
    online = Online(question, keys, observations, db, current_sql, result, verify)
    active, reason, binding = kind.activate(cand.item.check.params, online)
    return Activation(cand, active, reason, binding)


def activate_model(backend: Any, db: Any, question: str, current_sql: str, candidates: list[Candidate],
                   observations: list[dict[str, Any]], usage: CallBook, verify: bool = True,
                   schema_text: str = "") -> list[Activation]:
    """Let the model verify the general candidates (:func:`sqlmend.memory.kinds.general.activate`)."""
    return kinds.general.activate(backend, db, question, current_sql, candidates, observations, usage, verify,
                                  schema_text)
