"""Rule-based perturbation operators (ErrorLLM §3.1, ``Rule_λ(τ_y, S)``).

Each operator takes the AST of a gold SQL and the schema and returns candidate
perturbed trees that carry one error of its taxonomy type. An operator never
checks execution itself: :mod:`sqlmend.synth.build` keeps a candidate only if
``Exec(y', D) ≠ Exec(y, D)``. Operators are registered in :data:`OPERATORS`,
one or more per error type; :func:`operators_for` lists them.

Spider's gold writes string literals in double quotes, which the parser reads
as quoted identifiers; :func:`sqlmend.structure.canonical.is_string_like`
treats a quoted "column" that names no column in scope as the string it is.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from sqlmend import taxonomy
from sqlmend.sql import ast, conjuncts
from sqlmend.structure.canonical import scope_tables
from sqlmend.synth.nodes import (AGG_SWAP, FLIP, SETOPS, conditions, join_eqs, other_columns, real_columns, remove_conjunct,
                                 select_columns, selects, string_values, table_of, with_column)
from sqlmend.types import Schema

Tree = ast.Expression


@dataclass(frozen=True)
class Operator:
    """A perturbation operator: ``apply(tree, schema, rng) -> candidate trees`` for one error type."""

    name: str
    error_type: str
    apply: Callable[[Tree, Schema, random.Random], list[Tree]]
    doc: str


OPERATORS: dict[str, Operator] = {}


def operator(name: str, error_type: str):
    """Register a perturbation operator under ``name`` for ``error_type`` (a taxonomy id)."""
    taxonomy.get(error_type)

    def wrap(fn):
        OPERATORS[name] = Operator(name, error_type, fn, (fn.__doc__ or "").strip().splitlines()[0])
        return fn

    return wrap


def operators_for(error_type: str) -> list[Operator]:
    """Return the operators that inject ``error_type``."""
    return [op for op in OPERATORS.values() if op.error_type == error_type]


def _column_swapper(schema: Schema) -> Callable[[tuple, random.Random], bool]:
    """A ``change`` for :func:`_edit` over ``(column, select, table)`` items: use another column of the table."""

    def change(item: tuple, rng: random.Random) -> bool:
        col, _sel, table = item
        cands = other_columns(table, col.name, schema)
        if not cands:
            return False
        col.replace(with_column(col, rng.choice(cands)))
        return True

    return change


def _sample(items: list, rng: random.Random, k: int = 3) -> list:
    items = list(items)
    rng.shuffle(items)
    return items[:k]


def _edit(tree: Tree, locate: Callable[[Tree], list], change: Callable[[Tree, random.Random], bool],
          rng: random.Random, k: int = 3) -> list[Tree]:
    """Copy the tree once per located node (index-addressed) and apply ``change`` to the copy's node.

    ``change`` returns True when it edited the node, False when it could not,
    or the new root when it replaced the root node itself.
    """
    n = len(locate(tree))
    out = []
    for i in _sample(range(n), rng, k):
        copy = tree.copy()
        nodes = locate(copy)
        done = change(nodes[i], rng) if i < len(nodes) else False
        if isinstance(done, ast.Expression):  # the change replaced the root itself
            out.append(done)
        elif done:
            out.append(copy)
    return out


# --- attribute -------------------------------------------------------------


@operator("attribute_swap", "attribute_mismatch")
def attribute_swap(tree: Tree, schema: Schema, rng: random.Random) -> list[Tree]:
    """Replace a selected column with another column of the same table (same type when possible)."""

    return _edit(tree, lambda t: select_columns(t, schema), _column_swapper(schema), rng)


@operator("attribute_add", "attribute_redundancy")
def attribute_add(tree: Tree, schema: Schema, rng: random.Random) -> list[Tree]:
    """Append a column the question does not ask for to a SELECT list."""
    out = []
    for i, sel in enumerate(selects(tree)):
        scope = scope_tables(sel)
        if not scope or sel.args.get("group") or any(isinstance(e, ast.AggFunc) for e in sel.expressions):
            continue
        alias, table = rng.choice(sorted(scope.items()))
        tab = schema.table(table)
        taken = {c.name.lower() for c in sel.expressions if isinstance(c, ast.Column)}
        cands = [c.name for c in tab.columns if c.name.lower() not in taken] if tab else []
        if not cands:
            continue
        copy = tree.copy()
        target = selects(copy)[i]
        qual = alias if (len(scope) > 1 or any(isinstance(c, ast.Column) and c.table for c in sel.expressions)) else None
        if qual and alias == table.lower():
            qual = table
        target.select(ast.column(rng.choice(cands), table=qual), copy=False)
        out.append(copy)
    return out[:3]


@operator("attribute_drop", "attribute_missing")
def attribute_drop(tree: Tree, schema: Schema, rng: random.Random) -> list[Tree]:
    """Remove one item of a SELECT list that has two or more."""
    def locate(t):
        return [(sel, j) for sel in selects(t) if len(sel.expressions) >= 2 for j in range(len(sel.expressions))]

    def change(item, rng):
        sel, j = item
        sel.expressions[j].pop()
        return True

    return _edit(tree, locate, change, rng)


# --- table -------------------------------------------------------------------


@operator("join_key_swap", "table_mismatch")
def join_key_swap(tree: Tree, schema: Schema, rng: random.Random) -> list[Tree]:
    """Join on the wrong column: replace one side of a join condition with another column of its table."""

    def change(eq, rng):
        sel = eq.parent_select
        side = rng.choice([eq.this, eq.expression])
        table = table_of(side, sel, schema) if sel is not None else None
        cands = other_columns(table, side.name, schema) if table else []
        if not cands:
            return False
        side.replace(with_column(side, rng.choice(cands)))
        return True

    return _edit(tree, join_eqs, change, rng)


@operator("table_swap", "table_mismatch")
def table_swap(tree: Tree, schema: Schema, rng: random.Random) -> list[Tree]:
    """Read from a different table that has every column the query uses from the original one."""
    out = []
    for sel in selects(tree):
        for tnode in [t for t in sel.find_all(ast.Table) if t.parent_select is sel]:
            key = (tnode.alias or tnode.name).lower()
            used = {c.name.lower() for c in sel.find_all(ast.Column)
                    if (c.table or "").lower() == key or (not c.table and len(scope_tables(sel)) == 1)}
            others = [t for t in schema.tables if t.name.lower() != tnode.name.lower()
                      and used <= {c.name.lower() for c in t.columns}]
            if not others:
                continue
            copy = tree.copy()
            target = next(x for x in copy.find_all(ast.Table) if x == tnode)
            target.set("this", ast.to_identifier(rng.choice(others).name))
            out.append(copy)
    return out[:2]


@operator("join_add", "table_redundancy")
def join_add(tree: Tree, schema: Schema, rng: random.Random) -> list[Tree]:
    """Inner-join a table reachable by a foreign key that the question does not need."""
    out = []
    for i, sel in enumerate(selects(tree)):
        scope = scope_tables(sel)
        in_query = {t.lower() for t in scope.values()}
        links = []
        for fk in schema.foreign_keys:
            for a, b in ((fk.table, fk.ref_table), (fk.ref_table, fk.table)):
                if a.lower() in in_query and b.lower() not in in_query:
                    mine, theirs = (fk.columns, fk.ref_columns) if a == fk.table else (fk.ref_columns, fk.columns)
                    links.append((a, mine[0], b, theirs[0]))
        if not links:
            continue
        a, col_a, b, col_b = rng.choice(links)
        alias_a = next(k for k, v in scope.items() if v.lower() == a.lower())
        uses_alias = any(k != v.lower() for k, v in scope.items())
        new_alias = f"T{len(scope) + 1}" if uses_alias else b
        qual_a = alias_a if uses_alias else a
        copy = tree.copy()
        target = selects(copy)[i]
        if not target.args.get("from_"):
            continue
        if any(isinstance(c, ast.Column) and not c.table for c in target.find_all(ast.Column)) and not uses_alias:
            continue  # unqualified columns could become ambiguous
        join_table = f"{b} AS {new_alias}" if uses_alias else b
        target.join(join_table, on=f"{qual_a}.{col_a} = {new_alias}.{col_b}", copy=False)
        out.append(copy)
    return out[:2]


@operator("join_drop", "table_missing")
def join_drop(tree: Tree, schema: Schema, rng: random.Random) -> list[Tree]:
    """Drop a joined table (and the WHERE conditions on it) that the SELECT list does not read."""
    def locate(t):
        return [j for j in t.find_all(ast.Join) if isinstance(j.this, ast.Table)]

    def change(join, rng):
        sel = join.parent_select
        key = (join.this.alias or join.this.name).lower()
        for e in sel.expressions:
            if any((c.table or "").lower() == key for c in e.find_all(ast.Column)):
                return False
        for part in ("group", "order", "having"):
            node = sel.args.get(part)
            if node is not None and any((c.table or "").lower() == key for c in node.find_all(ast.Column)):
                return False
        where = sel.args.get("where")
        if where is not None:
            for pred in list(conjuncts(where.this)):
                if any((c.table or "").lower() == key for c in pred.find_all(ast.Column)):
                    remove_conjunct(sel, pred)
        for other in sel.args.get("joins") or []:
            if other is not join and (on := other.args.get("on")) is not None:
                if any((c.table or "").lower() == key for c in on.find_all(ast.Column)):
                    return False
        join.pop()
        return True

    return _edit(tree, locate, change, rng)


# --- value -------------------------------------------------------------------


def _value_variant(text: str, rng: random.Random) -> str:
    choices = []
    if text != text.lower():
        choices.append(text.lower())
    if text != text.upper():
        choices.append(text.upper())
    if len(text) > 3:
        choices.append(text[:-1] if not text.endswith("%") else text[:-2] + "%")
    choices.append(text + "s" if not text.endswith("s") else text[:-1])
    return rng.choice(choices)


@operator("value_variant", "value_error")
def value_variant(tree: Tree, schema: Schema, rng: random.Random) -> list[Tree]:
    """Write a compared string value the way the database does not store it (case, plural, cut)."""

    def change(node, rng):
        text = node.name if isinstance(node, ast.Column) else node.this
        new = _value_variant(str(text), rng)
        node.replace(ast.Literal.string(new))
        return True

    return _edit(tree, lambda t: string_values(t, schema), change, rng)


@operator("number_shift", "value_error")
def number_shift(tree: Tree, schema: Schema, rng: random.Random) -> list[Tree]:
    """Change a number compared in a condition (off by one, or a factor of ten)."""
    def locate(t):
        return [n for n in t.find_all(ast.Literal) if not n.is_string
                and isinstance(n.parent, (ast.EQ, ast.NEQ, ast.GT, ast.GTE, ast.LT, ast.LTE, ast.Between))]

    def change(node, rng):
        try:
            v = float(node.this)
        except ValueError:
            return False
        new = rng.choice([v + 1, v - 1, v * 10]) if v else 1
        node.replace(ast.Literal.number(int(new) if float(new).is_integer() else new))
        return True

    return _edit(tree, locate, change, rng)


# --- condition -----------------------------------------------------------------


@operator("condition_drop", "condition_missing")
def condition_drop(tree: Tree, schema: Schema, rng: random.Random) -> list[Tree]:
    """Remove one condition of a WHERE clause (the whole clause when it has one)."""
    def locate(t):
        return [(sel, p) for sel in selects(t) if (w := sel.args.get("where")) is not None
                for p in conjuncts(w.this)]

    def change(item, rng):
        remove_conjunct(*item)
        return True

    return _edit(tree, locate, change, rng)


@operator("operator_flip", "condition_error")
def operator_flip(tree: Tree, schema: Schema, rng: random.Random) -> list[Tree]:
    """Use the wrong comparison operator in a WHERE/HAVING condition."""
    def locate(t):
        return [n for n, _ in conditions(t, *FLIP)]

    def change(node, rng):
        cls = rng.choice(FLIP[type(node)])
        node.replace(cls(this=node.this.copy(), expression=node.expression.copy()))
        return True

    return _edit(tree, locate, change, rng)


@operator("connective_flip", "condition_error")
def connective_flip(tree: Tree, schema: Schema, rng: random.Random) -> list[Tree]:
    """Join two conditions with OR instead of AND, or AND instead of OR."""
    def locate(t):
        return [n for n in t.find_all(ast.And, ast.Or)
                if isinstance(n.parent, (ast.Where, ast.Having, ast.And, ast.Or, ast.Paren))]

    def change(node, rng):
        cls = ast.Or if isinstance(node, ast.And) else ast.And
        new = cls(this=node.this.copy(), expression=node.expression.copy())
        node.replace(ast.Paren(this=new) if isinstance(node.parent, (ast.And, ast.Or)) else new)
        return True

    return _edit(tree, locate, change, rng)


@operator("condition_column_swap", "condition_error")
def condition_column_swap(tree: Tree, schema: Schema, rng: random.Random) -> list[Tree]:
    """Compare the wrong column: replace the column of a WHERE condition with another of its table."""
    def locate(t):
        out = []
        for sel in selects(t):
            w = sel.args.get("where")
            if w is not None:
                out += [(c, sel, tab) for c, tab in real_columns(sel, schema, w.find_all(ast.Column))
                        if c.parent_select is sel]
        return out

    return _edit(tree, locate, _column_swapper(schema), rng)


# --- function ------------------------------------------------------------------


@operator("aggregate_swap", "function_error")
def aggregate_swap(tree: Tree, schema: Schema, rng: random.Random) -> list[Tree]:
    """Use the wrong aggregate function (MAX for MIN, SUM for AVG, COUNT for SUM, ...)."""
    def locate(t):
        return [n for n in t.find_all(*AGG_SWAP)
                if not (isinstance(n, ast.Count) and isinstance(n.this, ast.Star))]

    def change(node, rng):
        arg = node.this.copy()
        if isinstance(arg, ast.Distinct):
            return False
        node.replace(rng.choice(AGG_SWAP[type(node)])(this=arg))
        return True

    return _edit(tree, locate, change, rng)


@operator("aggregate_drop", "function_error")
def aggregate_drop(tree: Tree, schema: Schema, rng: random.Random) -> list[Tree]:
    """Return the bare column where the question asks for an aggregate of it."""
    def locate(t):
        return [n for n in t.find_all(ast.Max, ast.Min, ast.Avg, ast.Sum)
                if isinstance(n.this, ast.Column) and isinstance(n.parent, (ast.Select, ast.Alias))]

    def change(node, rng):
        node.replace(node.this.copy())
        return True

    return _edit(tree, locate, change, rng)


# --- clause ------------------------------------------------------------------------


@operator("group_by_drop", "clause_error")
def group_by_drop(tree: Tree, schema: Schema, rng: random.Random) -> list[Tree]:
    """Drop a GROUP BY clause (and its HAVING)."""
    def locate(t):
        return [s for s in selects(t) if s.args.get("group") is not None]

    def change(sel, rng):
        sel.args["group"].pop()
        if sel.args.get("having") is not None:
            sel.args["having"].pop()
        return True

    return _edit(tree, locate, change, rng)


@operator("order_by_swap", "clause_error")
def order_by_swap(tree: Tree, schema: Schema, rng: random.Random) -> list[Tree]:
    """Sort by the wrong column in an ORDER BY ... LIMIT query."""
    def locate(t):
        return [(c, sel, tab) for sel in selects(t) if sel.args.get("order") is not None and sel.args.get("limit")
                for c, tab in real_columns(sel, schema, sel.args["order"].find_all(ast.Column))]

    return _edit(tree, locate, _column_swapper(schema), rng)


@operator("having_drop", "clause_error")
def having_drop(tree: Tree, schema: Schema, rng: random.Random) -> list[Tree]:
    """Drop a HAVING clause."""
    def locate(t):
        return [s for s in selects(t) if s.args.get("having") is not None]

    def change(sel, rng):
        sel.args["having"].pop()
        return True

    return _edit(tree, locate, change, rng)


@operator("set_operation_swap", "clause_error")
def set_operation_swap(tree: Tree, schema: Schema, rng: random.Random) -> list[Tree]:
    """Use the wrong set operation (UNION / INTERSECT / EXCEPT)."""
    def locate(t):
        return list(t.find_all(*SETOPS))

    def change(node, rng):
        cls = rng.choice([c for c in SETOPS if not isinstance(node, c)])
        new = cls(this=node.this.copy(), expression=node.expression.copy(), distinct=True)
        if node.parent is None:
            return new
        node.replace(new)
        return True

    return _edit(tree, locate, change, rng)


# --- modifier --------------------------------------------------------------------


@operator("sort_direction_flip", "modifier_error")
def sort_direction_flip(tree: Tree, schema: Schema, rng: random.Random) -> list[Tree]:
    """Sort in the wrong direction (ASC for DESC and back)."""
    def locate(t):
        return list(t.find_all(ast.Ordered))

    def change(node, rng):
        node.set("desc", not node.args.get("desc"))
        return True

    return _edit(tree, locate, change, rng)


@operator("limit_change", "modifier_error")
def limit_change(tree: Tree, schema: Schema, rng: random.Random) -> list[Tree]:
    """Return the wrong number of rows: change or drop a LIMIT."""
    def locate(t):
        return [s for s in selects(t) if s.args.get("limit") is not None]

    def change(sel, rng):
        lim = sel.args["limit"]
        try:
            n = int(lim.expression.this)
        except (AttributeError, ValueError, TypeError):
            return False
        choice = rng.choice(["drop", "more", "less"] if n > 1 else ["drop", "more"])
        if choice == "drop":
            lim.pop()
        else:
            lim.set("expression", ast.Literal.number(n + 1 if choice == "more" else n - 1))
        return True

    return _edit(tree, locate, change, rng)


@operator("distinct_toggle", "modifier_error")
def distinct_toggle(tree: Tree, schema: Schema, rng: random.Random) -> list[Tree]:
    """Add or remove DISTINCT (on the SELECT list or inside COUNT)."""
    def locate(t):
        return selects(t) + [c for c in t.find_all(ast.Count) if not isinstance(c.this, ast.Star)]

    def change(node, rng):
        if isinstance(node, ast.Count):
            arg = node.this
            node.set("this", arg.expressions[0].copy() if isinstance(arg, ast.Distinct)
                     else ast.Distinct(expressions=[arg.copy()]))
        elif node.args.get("distinct") is not None:
            node.args["distinct"].pop()
        else:
            node.set("distinct", ast.Distinct())
        return True

    return _edit(tree, locate, change, rng)
