"""Target local adaptation: bind activated items to the current SQL, then the guard (MIRA §3.3.3).

"The solver binds each activated item to the relevant tables, columns, values,
and SQL locations [...]. When several items are activated, the solver
integrates them into one complete rewrite rather than applying their source
edits independently." Then: validate or retain.

Two ways, and the result says which was used (``how``):

* ``mechanical`` - mechanical items (value binding, column substitution,
  DISTINCT, a join condition shown necessary by a probe) are applied to the
  current tree with no model, all of them in one rewrite;
* ``model`` - the model receives the activated items with their bindings and
  preservation constraints and writes one complete rewrite. Without local
  adaptation (the §4.4 ablation) it receives the items alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from sqlmend import sql
from sqlmend.errors import SqlmendError
from sqlmend.memory.activation import Activation
from sqlmend.memory.keys import column_name
from sqlmend.memory.modelcall import Usage, ask

ast = sql.ast


@dataclass
class Adaptation:
    candidate: str | None
    how: str  # mechanical | model | none
    applied: list[str] = field(default_factory=list)  # item ids realised in the candidate
    note: str = ""


def _aliases(tree) -> dict[str, str]:
    return {(t.alias_or_name or "").lower(): t.name.lower() for t in tree.find_all(ast.Table)}


def _qualifier(tree, table: str) -> str | None:
    for t in tree.find_all(ast.Table):
        if t.name.lower() == table:
            return t.alias_or_name
    return None


def _apply_one(tree, act: Activation) -> bool:
    kind, b = act.candidate.item.kind, act.binding
    aliases = _aliases(tree)
    changed = False
    if kind == "value_binding":
        for r in b.get("rebind", [b]):
            for pred in tree.find_all(ast.EQ):
                col, lit = pred.this, pred.expression
                if isinstance(col, ast.Column) and isinstance(lit, ast.Literal) and lit.this == r["old"] \
                        and column_name(col, aliases) == r["column"]:
                    lit.replace(ast.Literal.string(str(r["new"])) if lit.is_string else ast.Literal.number(r["new"]))
                    changed = True
    elif kind == "predicate_column":
        table, new_col = b["right"].split(".", 1)
        qual = _qualifier(tree, table)
        for pred in tree.find_all(ast.EQ):
            col, lit = pred.this, pred.expression
            if qual is not None and isinstance(col, ast.Column) and isinstance(lit, ast.Literal) and \
                    lit.this == b["literal"] and column_name(col, aliases) == b["wrong"]:
                col.replace(ast.column(new_col, table=qual if col.table else None))
                changed = True
    elif kind == "column_substitution":
        table, new_col = b["right"].split(".", 1)
        qual = _qualifier(tree, table)
        for col in list(tree.find_all(ast.Column)):
            if column_name(col, aliases) == b["wrong"] and qual is not None:
                col.replace(ast.column(new_col, table=qual if col.table else None))
                changed = True
    elif kind == "distinct":
        if not tree.args.get("distinct") and isinstance(tree, ast.Select):
            tree.set("distinct", ast.Distinct())
            changed = True
    elif kind == "join_condition":
        for eq in list(tree.find_all(ast.EQ)):
            a, c = eq.this, eq.expression
            if isinstance(a, ast.Column) and isinstance(c, ast.Column) and \
                    sorted([column_name(a, aliases), column_name(c, aliases)]) == b["wrong"]:
                cols = []
                for ref in b["right"]:
                    table, name = ref.split(".", 1)
                    qual = _qualifier(tree, table)
                    if qual is None:
                        return False
                    cols.append(ast.column(name, table=qual))
                eq.replace(ast.EQ(this=cols[0], expression=cols[1]))
                changed = True
    return changed


def adapt_mechanical(current_sql: str, activations: list[Activation], dialect: str = "sqlite") -> Adaptation:
    """Apply every activated mechanical item to the current SQL in one rewrite.

    Args:
        current_sql: s_cur.
        activations: the activated mechanical items.
        dialect: the SQL dialect.

    Returns:
        The adaptation; ``candidate`` None when nothing could be bound.
    """
    try:
        tree = sql.parse(current_sql, dialect=dialect)
    except SqlmendError as e:
        return Adaptation(None, "none", note=f"current SQL does not parse: {e}")
    applied = [a.candidate.item.id for a in activations if _apply_one(tree, a)]
    if not applied:
        return Adaptation(None, "none", note="no activated item could be bound")
    return Adaptation(sql.render(tree, dialect=dialect, original=current_sql), "mechanical", applied)


class Rewrite(BaseModel):
    sql: str = Field(description="the complete rewritten SQL")
    applied: list[str] = Field(default_factory=list, description="ids of the items realised")


def adapt_model(backend: Any, question: str, current_sql: str, activations: list[Activation],
                observations: list[dict[str, Any]], usage: Usage, local: bool = True,
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
