"""TB04: a join pairs key columns of two tables that the schema links only through other tables."""

from __future__ import annotations

from sqlmend.rules.base import Rule, RuleContext
from sqlmend.rules.joins import cross_table_pairs, is_key_column, key_path, key_root, keys_between, linking_keys
from sqlmend.sql import ast
from sqlmend.sql.fixes import node_path
from sqlmend.types import Finding


class SkippedLink(Rule):
    """A join condition equates key columns of two tables that no foreign key links directly, while a chain of keys does.

    Both columns are keys (primary or foreign) that stand for different things
    (they reference different columns), and the schema joins the two tables
    only through others (``car_makers`` -> ``model_list`` -> ``car_names``):
    the condition pairs unrelated ids whose values merely overlap. Keys that
    end, through their foreign keys, at the same column (a composite key's
    part included) stand for the same thing and are not reported.

    The fix joins the one table between them (``bridge_join``) when the chain
    has exactly one, the query does not read it yet, the condition is in a
    ``JOIN ... ON`` and names the joined table, and one foreign key links each
    step (the one on the condition's column first) with values that pair.

    Anti-pattern::

        SELECT T1.Maker FROM car_makers AS T1 JOIN car_names AS T2 ON T1.Id = T2.MakeId

    Fixed::

        SELECT T1.Maker FROM car_makers AS T1 JOIN model_list AS T3 ON T1.Id = T3.Maker
        JOIN car_names AS T2 ON T3.Model = T2.Model
    """

    code = "TB04"
    name = "table.skipped_link"
    error_type = "table_mismatch"
    severity = "strict"
    fixable = True

    def check(self, ctx: RuleContext) -> list[Finding]:
        out = []
        for pair in cross_table_pairs(ctx):
            left, right = pair.left, pair.right
            if linking_keys(ctx, pair):
                continue  # a direct key: TB02 / TB03 judge the condition
            if not (is_key_column(ctx, left.table, left.column)
                    and is_key_column(ctx, right.table, right.column)):
                continue
            if key_root(ctx, left.table, left.column) == key_root(ctx, right.table, right.column):
                continue  # both stand for the same column: a legitimate shortcut
            path = key_path(ctx, left.table, right.table)
            if len(path) < 3:
                continue
            out.append(self.finding(
                detail=f"({left.ref} = {right.ref}; the keys link {' -> '.join(path)})",
                location=pair.node.sql(), schema_refs=[left.ref, right.ref, *path[1:-1]],
                evidence={"left": left.ref, "right": right.ref, "key_path": path}, fixes=_bridge(ctx, pair, path)))
        return out


def _step(ctx: RuleContext, a: str, b: str, prefer: str) -> tuple[str, str] | None:
    """The columns ``(of a, of b)`` of the one single-column foreign key between tables ``a`` and ``b``
    (among several, the one on ``a``'s column ``prefer``); None when none or no single one."""
    keys = []
    for fk in keys_between(ctx, a, b) if a != b else []:
        ends = {fk.table.lower(): fk.columns[0], fk.ref_table.lower(): fk.ref_columns[0]}
        keys.append((ends[a], ends[b]))
    preferred = [k for k in keys if k[0].lower() == prefer.lower()]
    chosen = preferred if len(preferred) == 1 else keys
    return chosen[0] if len(set(chosen)) == 1 else None


def _bridge(ctx: RuleContext, pair, path: list[str]) -> list[dict]:
    """The ``bridge_join`` fix through the one table between the condition's two tables ([] when none
    is proven)."""
    join = pair.node.find_ancestor(ast.Join)
    if len(path) != 3 or join is None or join.args.get("on") is None:
        return []
    joined = (join.this.alias_or_name or "").lower()
    sides = {(ref.alias or ref.node.table or ref.table or "").lower(): ref for ref in (pair.left, pair.right)}
    far, near = sides.get(joined), next((r for q, r in sides.items() if q != joined), None)
    if far is None or near is None or len(sides) != 2:
        return []
    bridge = ctx.schema.table(path[1])
    if bridge is None or any(s.table and s.table.lower() == path[1] or s.alias == path[1]
                             for s in ctx.analysis.sources(join.parent)):
        return []
    first = _step(ctx, near.table.lower(), path[1], near.column)
    second = _step(ctx, far.table.lower(), path[1], far.column)
    if first is None or second is None \
            or not ctx.probe.joinable((near.table, first[0]), (bridge.name, first[1])) \
            or not ctx.probe.joinable((bridge.name, second[1]), (far.table, second[0])):
        return []
    return [{"op": "bridge_join", "path": node_path(pair.node), "expect": pair.node.sql(dialect=ctx.dialect),
             "table": bridge.name, "near": [near.node.table or near.alias or near.table, first[0], first[1]],
             "far": [second[1], far.node.table or far.alias or far.table, second[0]]}]


RULE = SkippedLink()
