"""Target local adaptation: bind activated items to the current SQL, then the guard (MIRA §3.3.3).

"The solver binds each activated item to the relevant tables, columns, values,
and SQL locations [...]. When several items are activated, the solver
integrates them into one complete rewrite rather than applying their source
edits independently." Then: validate or retain.

Two ways, and the result says which was used (``how``):

* ``mechanical`` - each mechanical item's kind (:mod:`sqlmend.memory.kinds`)
  binds it to the current tree as fixes, which the one fix engine
  (:mod:`sqlmend.sql.fixes`) applies, item after item, in one rewrite; no model;
* ``model`` - the model receives the activated items with their bindings and
  preservation constraints and writes one complete rewrite. Without local
  adaptation (the §4.4 ablation) it receives the items alone.
"""

from __future__ import annotations

from typing import Any

from sqlmend import sql
from sqlmend.errors import FixError, SqlmendError
from sqlmend.llm.book import CallBook
from sqlmend.memory import kinds
from sqlmend.memory.kinds.base import Activation, Adaptation

__all__ = ["Adaptation", "adapt_mechanical", "adapt_model"]


def adapt_mechanical(current_sql: str, activations: list[Activation], dialect: str = "sqlite",
                     tree: Any = None) -> Adaptation:
    """Apply every activated mechanical item to the current SQL in one rewrite.

    Each item is bound to the tree as its earlier items left it (its kind's
    ``adapt`` plans fixes there, with a fresh scope-aware resolver).

    Args:
        current_sql: s_cur.
        activations: the activated mechanical items.
        dialect: the SQL dialect.
        tree: ``current_sql`` already parsed (copied before any edit), to spare a parse.

    Returns:
        The adaptation; ``candidate`` None when nothing could be bound.
    """
    if tree is not None:
        tree = tree.copy()
    else:
        try:
            tree = sql.parse(current_sql, dialect=dialect)
        except SqlmendError as e:
            return Adaptation(None, "none", note=f"current SQL does not parse: {e}")
    applied = []
    for act in activations:
        kind = kinds.get(act.candidate.item.kind)
        fixes = kind.adapt(tree, sql.Resolver(tree), act.binding) if kind.MECHANICAL else []
        if not fixes:
            continue
        try:
            tree = sql.fixes.apply_tree(tree, fixes, dialect)
        except FixError:
            continue
        applied.append(act.candidate.item.id)
    if not applied:
        return Adaptation(None, "none", note="no activated item could be bound")
    return Adaptation(sql.render(tree, dialect=dialect, original=current_sql), "mechanical", applied)


def adapt_model(backend: Any, question: str, current_sql: str, activations: list[Activation],
                observations: list[dict[str, Any]], usage: CallBook, local: bool = True,
                schema_text: str = "") -> Adaptation:
    """Let the model integrate the activated items into one rewrite (:func:`sqlmend.memory.kinds.general.adapt`)."""
    return kinds.general.adapt(backend, question, current_sql, activations, observations, usage, local,
                               schema_text)
