"""Join condition: a join on a column pair that is no key relationship moves to the key pair.

Proven when the repaired join pairs a foreign key and the reverted one does
not; recurs when the current SQL joins on the recorded wrong pair and a probe
shows the two pairs join different numbers of rows.
"""

from __future__ import annotations

from typing import Any

from sqlmend.db.base import quote_ident
from sqlmend.memory.kinds.base import Online, ast, column_fix, fill_contract, fragment, run_probe
from sqlmend.types import split_ref

NAME = "join_condition"
ERROR_TYPE = "table_mismatch"
MECHANICAL = True
PRESERVE = ["projection", "conditions"]


def _join_pair(frag: str | None, dialect: str) -> list[str] | None:
    node = fragment(frag, dialect)
    if isinstance(node, ast.EQ) and isinstance(node.this, ast.Column) and isinstance(node.expression, ast.Column):
        return sorted(f"{c.table}.{c.name}".lower() for c in (node.this, node.expression))
    return None


def classify(edits: list[Any], dialect: str) -> dict[str, Any] | None:
    """One REPLACE, in a JOIN, of a column pair by another pair that is not a column substitution."""
    if len(edits) != 1 or edits[0].kind != "replace" or edits[0].clause != "join":
        return None
    e = edits[0]
    pa, pb = _join_pair(e.before, dialect), _join_pair(e.after, dialect)
    if pa and pb and pa != pb:
        return {"wrong": pa, "right": pb}
    return None


def judge(question: str, p: dict[str, Any], facts: dict[str, Any]) -> tuple[bool, str]:
    after = [j for j in facts.get("joins", []) if j["side"] == "after" and j["foreign_key_pairs"]]
    before = [j for j in facts.get("joins", []) if j["side"] == "before" and j["foreign_key_pairs"]]
    return bool(after) and not before, f"foreign-key pairs: after {len(after)}, before {len(before)}"


def contract(p: dict[str, Any]) -> dict[str, Any]:
    pairs = {"wrong_pair": " = ".join(p["wrong"]), "right_pair": " = ".join(p["right"])}
    return fill_contract(NAME, PRESERVE, pairs)


def probe(wrong: list[str], right: list[str], dialect: str = "sqlite") -> str:
    """The read-only query counting the rows each pair joins (names quoted for ``dialect``)."""
    def q(name: str) -> str:
        return quote_ident(name, dialect)

    def cond(pair: list[str]) -> str:
        (ta, ca), (tb, cb) = (split_ref(x) for x in pair)
        return f"{q(ta)}.{q(ca)} = {q(tb)}.{q(cb)}"

    ta, tb = split_ref(wrong[0])[0], split_ref(wrong[1])[0]
    base = f"FROM {q(ta)} JOIN {q(tb)} ON "
    return f"SELECT (SELECT COUNT(*) {base}{cond(wrong)}), (SELECT COUNT(*) {base}{cond(right)})"


def activate(p: dict[str, Any], online: Online) -> tuple[bool, str, dict[str, Any]]:
    wrong, right = p["wrong"], p["right"]
    if f"join:{wrong[0]}={wrong[1]}" not in online.keys:
        return False, "current SQL does not join on the recorded wrong pair", {}
    if not online.verify:
        return True, "bound without verification", {"wrong": wrong, "right": right}
    query = probe(wrong, right, getattr(online.db, "dialect", "sqlite"))
    obs = run_probe(online.db, query)
    rows = obs.get("rows") or [[None, None]]
    if obs.get("error") or rows[0][0] == rows[0][1]:
        return False, f"probe shows no difference: {obs}", {}
    return True, f"probe: {rows[0][0]} joined rows vs {rows[0][1]} on the key pair", \
        {"wrong": wrong, "right": right, "probe": query}


def adapt(tree: Any, resolver: Any, b: dict[str, Any]) -> list[dict[str, Any]]:
    fixes = []
    for eq in tree.find_all(ast.EQ):
        a, c = eq.this, eq.expression
        if isinstance(a, ast.Column) and isinstance(c, ast.Column) and \
                sorted([resolver.column_name(a), resolver.column_name(c)]) == b["wrong"]:
            for side, ref in zip((a, c), b["right"]):
                table, name = split_ref(ref)
                qual = resolver.qualifier(table, at=eq)
                if qual is None:
                    return []
                fixes.append(column_fix(side, name, qual))
    return fixes
