"""Value binding: a literal compared with a column is rebound to the value the column stores.

``a.x = 'Haiti' OR b.y = '1'`` -> ``a.x = 'haiti' OR b.y = '1'``. Proven when the
wrong value matches no row and the right one matches rows; recurs when the
current SQL compares the column with the recorded wrong value, or with a value
no row stores that has exactly one stored spelling.
"""

from __future__ import annotations

from typing import Any

from sqlmend.memory.edits import shape
from sqlmend.memory.kinds.base import Online, ast, fill_contract, fragment, predicate_rows, stored_variants
from sqlmend.sql.fixes import node_path

NAME = "value_binding"
ERROR_TYPE = "value_error"
MECHANICAL = True
PRESERVE = ["other conditions", "projection", "joins"]


def _comparisons(node: Any) -> list[tuple[str, Any]]:
    """``(table.column, literal)`` of every ``column = literal`` inside a node, in order."""
    out = []
    for pred in node.find_all(ast.EQ):
        col, lit = pred.this, pred.expression
        if isinstance(col, ast.Literal):
            col, lit = lit, col
        if isinstance(col, ast.Column) and isinstance(lit, ast.Literal) and col.table:
            out.append((f"{col.table}.{col.name}".lower(), lit.this))
    return out


def _rebindings(before: str | None, after: str | None, clause: str, dialect: str) -> list[dict[str, Any]] | None:
    """The literals a REPLACE rebinds when it changes nothing but ``column = literal`` values.

    Anything else changed (an operator, a column, a structure) gives None.
    """
    if not before or not after or shape(before) != shape(after):
        return None
    a, b = fragment(before, dialect), fragment(after, dialect)
    if a is None or b is None:
        return None
    ca, cb = _comparisons(a), _comparisons(b)
    if len(ca) != len(cb) or [c for c, _ in ca] != [c for c, _ in cb]:
        return None
    masked = [x.copy() for x in (a, b)]
    for tree in masked:
        for lit in list(tree.find_all(ast.Literal)):
            lit.replace(ast.Literal.string("?"))
    if masked[0].sql(dialect=dialect) != masked[1].sql(dialect=dialect):
        return None
    out = [{"column": col, "wrong": x, "right": y, "clause": clause} for (col, x), (_, y) in zip(ca, cb) if x != y]
    return out or None


def classify(edits: list[Any], dialect: str) -> dict[str, Any] | None:
    """Only ``column = literal`` values change, in one or several REPLACE edits."""
    if not edits or not all(e.kind == "replace" for e in edits):
        return None
    found = [_rebindings(e.before, e.after, e.clause, dialect) for e in edits]
    if not all(found):
        return None
    bindings = [b for f in found for b in f]
    return dict(bindings[0]) | ({"bindings": bindings} if len(bindings) > 1 else {})


def judge(question: str, p: dict[str, Any], facts: dict[str, Any]) -> tuple[bool, str]:
    rows = predicate_rows(facts)
    seen = [(b, rows.get(("before", b["column"], str(b["wrong"]))), rows.get(("after", b["column"], str(b["right"]))))
            for b in p.get("bindings", [p])]
    ok = all(wrong == 0 and bool(right) for _, wrong, right in seen)
    why = "; ".join(f"{b['column']}: {b['wrong']!r} matches {wrong} rows, {b['right']!r} matches {right}"
                    for b, wrong, right in seen)
    return ok, why


def contract(p: dict[str, Any]) -> dict[str, Any]:
    return fill_contract(NAME, PRESERVE, p | {"wrong_repr": repr(p["wrong"]), "right_repr": repr(p["right"])})


def activate(p: dict[str, Any], online: Online) -> tuple[bool, str, dict[str, Any]]:
    rebind, seen = [], []
    for b in p.get("bindings", [p]):
        for o in online.observations:
            if o.get("column") != b["column"] or o.get("op") != "EQ":
                continue
            variants = stored_variants(online.db, b["column"], o["literal"]) if o.get("rows") == 0 else []
            if str(o["literal"]).lower() == str(b["wrong"]).lower():
                new = b["right"]
            elif len(variants) == 1 and variants[0] != o["literal"]:
                new = variants[0]
            else:
                continue
            if online.verify and o.get("rows") != 0:
                seen.append(f"{o['literal']!r} matches {o.get('rows')} rows")
                continue
            rebind.append({"column": b["column"], "old": o["literal"], "new": new})
    if not rebind:
        return False, f"{'; '.join(seen)}: no violation" if seen else f"no comparison on {p['column']} to rebind", {}
    return True, "; ".join(f"{r['old']!r} matches no row of {r['column']}; stored: {r['new']!r}"
                           for r in rebind), {"rebind": rebind}


def _number(value: Any) -> int | float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    for cast in (int, float):
        try:
            return cast(str(value))
        except ValueError:
            continue
    return None


def adapt(tree: Any, resolver: Any, b: dict[str, Any]) -> list[dict[str, Any]]:
    fixes: dict[str, dict[str, Any]] = {}
    for r in b.get("rebind", [b]):
        for pred in tree.find_all(ast.EQ):
            col, lit = pred.this, pred.expression
            if isinstance(col, ast.Column) and isinstance(lit, ast.Literal) and lit.this == r["old"] \
                    and resolver.column_name(col) == r["column"]:
                value = str(r["new"]) if lit.is_string else _number(r["new"])
                path = node_path(lit)
                if value is not None and path not in fixes:
                    fixes[path] = {"op": "replace_literal", "path": path, "value": value}
    return list(fixes.values())
