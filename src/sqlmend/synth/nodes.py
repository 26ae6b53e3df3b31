"""Tree locations and edits shared by the injection operators and the repair generators.

A perturbation operator (:mod:`sqlmend.synth.operators`) and a repair generator
(:mod:`sqlmend.search.generators`) look at the same places of a query (the
columns of a SELECT list, the conjuncts of a WHERE, the comparisons, the
aggregates) and make the same kinds of edits; they differ only in direction and
in sampling one edit versus trying them all.
"""

from __future__ import annotations

from sqlmend.sql import ast, conjuncts
from sqlmend.structure.canonical import is_string_like, scope_tables
from sqlmend.types import Schema

Tree = ast.Expression


def selects(tree: Tree) -> list[ast.Select]:
    """Every SELECT of the tree (subqueries and set-operation branches included), outermost first."""
    return list(tree.find_all(ast.Select))


def holders(name: str, sel: ast.Select, schema: Schema) -> list[tuple[str, str]]:
    """``(alias (lower), table)`` of each table ``sel`` reads directly that has a column ``name``."""
    return [(alias, t) for alias, t in scope_tables(sel).items()
            if (tab := schema.table(t)) and tab.column(name)]


def table_of(col: ast.Column, sel: ast.Select, schema: Schema) -> str | None:
    """The schema table a column of ``sel`` belongs to, when it can be told."""
    if col.table:
        return scope_tables(sel).get(col.table.lower())
    owners = [t for _, t in holders(col.name, sel, schema)]
    return owners[0] if len(set(owners)) == 1 else None


def real_columns(sel: ast.Select, schema: Schema, nodes) -> list[tuple[ast.Column, str]]:
    out = []
    for n in nodes:
        if isinstance(n, ast.Column) and not is_string_like(n, schema):
            t = table_of(n, sel, schema)
            if t and (tab := schema.table(t)) and tab.column(n.name):
                out.append((n, t))
    return out


def type_class(type_name: str) -> str:
    low = (type_name or "").lower()
    if any(k in low for k in ("int", "real", "num", "dec", "float", "double")):
        return "num"
    return "text"


def other_columns(table: str, col: str, schema: Schema, same_type: bool = True) -> list[str]:
    tab = schema.table(table)
    if tab is None:
        return []
    me = tab.column(col)
    kind = type_class(me.type) if me else "text"
    cands = [c.name for c in tab.columns if c.name.lower() != col.lower()]
    if same_type:
        typed = [c.name for c in tab.columns if c.name.lower() != col.lower() and type_class(c.type) == kind]
        cands = typed or cands
    return cands


def with_column(col: ast.Column, new_name: str) -> ast.Column:
    return ast.column(new_name, table=col.table or None)


def select_columns(tree: Tree, schema: Schema):
    """Direct column items of every SELECT list, with their select."""
    out = []
    for sel in selects(tree):
        for e in sel.expressions:
            node = e.this if isinstance(e, ast.Alias) else e
            out += [(c, sel, t) for c, t in real_columns(sel, schema, [node])]
    return out


def join_eqs(tree: Tree):
    return [eq for j in tree.find_all(ast.Join) if (on := j.args.get("on")) is not None
            for eq in on.find_all(ast.EQ)
            if isinstance(eq.this, ast.Column) and isinstance(eq.expression, ast.Column)]


def conditions(tree: Tree, *types) -> list[tuple[Tree, ast.Select]]:
    """Nodes of ``types`` in the WHERE and HAVING of every SELECT (not of its subqueries), with that SELECT."""
    return [(n, sel) for sel in selects(tree) for part in ("where", "having")
            if (w := sel.args.get(part)) is not None
            for n in w.find_all(*types) if n.parent_select is sel]


def string_values(tree: Tree, schema: Schema):
    return [n for n, _ in conditions(tree, ast.Literal, ast.Column) if is_string_like(n, schema)]


def remove_conjunct(sel: ast.Select, pred: Tree) -> None:
    where = sel.args.get("where")
    parts = [p for p in conjuncts(where.this) if p is not pred]
    if not parts:
        where.pop()
        return
    cond = parts[0]
    for p in parts[1:]:
        cond = ast.and_(cond, p, copy=False)
    where.set("this", cond)


FLIP = {ast.EQ: [ast.NEQ], ast.NEQ: [ast.EQ], ast.GT: [ast.LT, ast.GTE, ast.LTE], ast.LT: [ast.GT, ast.LTE, ast.GTE],
         ast.GTE: [ast.LT, ast.GT], ast.LTE: [ast.GT, ast.LT]}


AGG_SWAP = {ast.Max: [ast.Min, ast.Avg], ast.Min: [ast.Max, ast.Avg], ast.Avg: [ast.Sum, ast.Max, ast.Min],
             ast.Sum: [ast.Avg, ast.Count, ast.Max], ast.Count: [ast.Sum, ast.Max]}


SETOPS = [ast.Union, ast.Intersect, ast.Except]
