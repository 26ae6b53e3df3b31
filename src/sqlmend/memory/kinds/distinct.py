"""DISTINCT: added to a projection whose result repeats rows the question wants once.

Proven when the result without DISTINCT has duplicate rows and the result with
it has none; recurs when the current SQL has no DISTINCT, projects the item's
columns and its result repeats rows.
"""

from __future__ import annotations

from typing import Any

from sqlmend.memory.kinds.base import Online, ast, fill_contract

NAME = "distinct"
ERROR_TYPE = "modifier_error"
MECHANICAL = True
PRESERVE = ["projection", "conditions", "joins"]


def classify(edits: list[Any], dialect: str) -> dict[str, Any] | None:
    """One INSERT of DISTINCT."""
    if len(edits) != 1:
        return None
    e = edits[0]
    if e.kind == "insert" and (e.clause == "distinct" or (e.after or "").strip().upper() == "DISTINCT"):
        return {"columns": sorted(r.lower() for r in e.schema_refs if "." in r)}
    return None


def judge(question: str, p: dict[str, Any], facts: dict[str, Any]) -> tuple[bool, str]:
    g = facts.get("grain", {})
    dup_a, dup_b = g.get("reverted", {}).get("duplicate_rows", 0), g.get("repair", {}).get("duplicate_rows", 0)
    return dup_a > 0 and dup_b == 0, f"duplicate rows {dup_a} without DISTINCT, {dup_b} with"


def contract(p: dict[str, Any]) -> dict[str, Any]:
    return fill_contract(NAME, PRESERVE, {"listed": ", ".join(p["columns"]) or "the projection"})


def _duplicates(result: Any) -> int:
    if result is None:
        return 0
    return len(result.rows) - len(set(map(tuple, result.rows)))


def activate(p: dict[str, Any], online: Online) -> tuple[bool, str, dict[str, Any]]:
    if "distinct" in online.keys:
        return False, "current SQL already has DISTINCT", {}
    shared = [c for c in p.get("columns", []) if f"col:select:{c}" in online.keys]
    if p.get("columns") and not shared:
        return False, "projection does not share the item's columns", {}
    dups = _duplicates(online.result)
    if online.verify and dups == 0:
        return False, "current result has no duplicate rows", {}
    return True, f"current result repeats {dups} rows", {"columns": shared}


def adapt(tree: Any, resolver: Any, b: dict[str, Any]) -> list[dict[str, Any]]:
    if isinstance(tree, ast.Select) and not tree.args.get("distinct"):
        return [{"op": "set_distinct", "path": ""}]
    return []
