"""Column substitution: one column replaced by another that the question names.

``SELECT T1.name`` -> ``SELECT T1.song_name`` for "the song names". Proven when
the question names the new column more than the old one; recurs when the
current SQL uses the old column in the same clause, reads the new column's
table, and the question names the new column.
"""

from __future__ import annotations

from typing import Any

from sqlmend.memory.kinds.base import Online, ast, column_fix, fill_contract, fragment, named_over, \
    qualified_name
from sqlmend.types import split_ref

NAME = "column_substitution"
ERROR_TYPE = "attribute_mismatch"
MECHANICAL = True
PRESERVE = ["other columns", "conditions", "joins"]


def classify(edits: list[Any], dialect: str) -> dict[str, Any] | None:
    """One REPLACE of a qualified column by another."""
    if len(edits) != 1 or edits[0].kind != "replace":
        return None
    e = edits[0]
    ca, cb = qualified_name(fragment(e.before, dialect)), qualified_name(fragment(e.after, dialect))
    if ca and cb and ca != cb:
        return {"wrong": ca, "right": cb, "clause": e.clause}
    return None


def judge(question: str, p: dict[str, Any], facts: dict[str, Any]) -> tuple[bool, str]:
    ok, right, wrong = named_over(question, p["right"], p["wrong"])
    return ok, f"question names {sorted(right)} of {p['right']} vs {sorted(wrong)} of {p['wrong']}"


def contract(p: dict[str, Any]) -> dict[str, Any]:
    return fill_contract(NAME, PRESERVE, p | {"named": p["right"].split(".")[-1].replace("_", " ")})


def activate(p: dict[str, Any], online: Online) -> tuple[bool, str, dict[str, Any]]:
    if f"col:{p['clause']}:{p['wrong']}" not in online.keys:
        return False, f"{p['wrong']} not used in the {p['clause']} clause", {}
    if f"table:{p['right'].split('.')[0]}" not in online.keys:
        return False, f"table of {p['right']} not in the current SQL", {}
    ok, right, _ = named_over(online.question, p["right"], p["wrong"])
    if online.verify and not ok:
        return False, f"question does not name {p['right']} over {p['wrong']}", {}
    return True, f"question names {sorted(right)}", dict(p)


def adapt(tree: Any, resolver: Any, b: dict[str, Any]) -> list[dict[str, Any]]:
    table, new_col = split_ref(b["right"])
    fixes = []
    for col in tree.find_all(ast.Column):
        qual = resolver.qualifier(table, at=col)
        if resolver.column_name(col) == b["wrong"] and qual is not None:
            fixes.append(column_fix(col, new_col, qual if col.table else None))
    return fixes
