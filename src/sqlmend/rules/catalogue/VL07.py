"""VL07: the literal is stored in another column of a table the query already reads."""

from __future__ import annotations

from typing import Any

from sqlmend.rules.base import RuleContext
from sqlmend.rules.literals import (AbsentLiteral, LiteralRule, column_in_scope, literal_finding, misplaced,
                                    replacement_fix, scope_reads)
from sqlmend.rules.values import case_only, holders
from sqlmend.sql import ast
from sqlmend.types import Finding


class StoredInScope(LiteralRule):
    """The literal never occurs in the compared column, but exactly one column of the tables in scope stores it.

    The query compares the right value with the wrong column of a table it
    already reads: ``continent = 'Caribbean'`` where the table's ``Region``
    column holds 'Caribbean', or ``T2.Name = 'Anguilla'`` on the city table
    where the joined country table's ``Name`` holds it. Reported only when one
    column of one table read once in that SELECT holds the value (as written,
    or differing only in letter case: then the stored spelling is used too) —
    or, when several do, one of them has the compared column's name, or an
    inner ``JOIN ... ON`` equates them all (then any filters the same rows; the
    one in the compared column's own table is used) — the compared column
    itself holds no spelling of it, and the rewrite changes the query's result.
    VL03 reports the same literal with every holder in the database. Fix:
    compare that column.

    Anti-pattern::

        SELECT sum(SurfaceArea) FROM country WHERE Continent = 'Caribbean'

    Fixed::

        SELECT sum(SurfaceArea) FROM country WHERE Region = 'Caribbean'
    """

    code = "VL07"
    name = "value.stored_in_scope"
    error_type = "value_error"
    severity = "strict"
    fixable = True

    replaces = True

    def check_literal(self, ctx: RuleContext, absent: AbsentLiteral) -> Finding | None:
        if not misplaced(ctx, absent):
            return None  # not text, or a variant in the column itself (VL01's or VL06's business)
        value, ref = absent.value, absent.comparison.column
        reads = scope_reads(ctx, absent)
        found = [(reads[m.table.lower()], m) for m in holders(ctx, value, exclude=(absent.table, absent.column))
                 if m.table.lower() in reads and (m.value == value or case_only(value, m.value))]
        if len(found) > 1:  # several holders: the one named like the compared column, if just one
            named = [f for f in found if f[1].column.lower() == absent.column.lower()]
            found = named if named else _one_of_equated(ctx, found, ref.alias)
        if len(found) != 1 or len(found[0][0]) != 1:
            return None
        (source,), match = found[0]
        fixes = [column_in_scope(ctx, ref, source, match.column)]
        if match.value != value:
            fixes.append(replacement_fix(ctx, absent, match.value))
        return literal_finding(
            self, absent, f"({match.table}.{match.column}, read as {source.node.alias_or_name}, holds {match.value!r})",
            {"stored": match.value, "holder": f"{match.table}.{match.column}", "matches_as_written": 0,
             "source": "value index"},
            fixes=fixes, also=[f"{match.table}.{match.column}"])


def _one_of_equated(ctx: RuleContext, found: list, alias: str | None) -> list:
    """Holders an inner ``JOIN ... ON`` equates to one another filter the same rows: keep one.

    The one read through the compared column's own source (``alias``) if any,
    else the first; ``found`` unchanged when the holders are not all equated.
    """
    if any(len(sources) != 1 for sources, _ in found):
        return found
    keys = [(sources[0].alias, m.column.lower()) for sources, m in found]
    mine = next((i for i, (a, _) in enumerate(keys) if a == alias), 0)
    equal = {frozenset({(p.left.alias, p.left.column.lower()), (p.right.alias, p.right.column.lower())})
             for p in ctx.analysis.column_pairs() if _inner_on(p.node)}
    if all(i == mine or frozenset({keys[i], keys[mine]}) in equal for i in range(len(keys))):
        return [found[mine]]
    return found


def _inner_on(node: Any) -> bool:
    """``node`` is a conjunct of an inner join's ON condition (not under OR, not an outer join)."""
    parent = node.parent
    while isinstance(parent, (ast.And, ast.Paren)):
        parent = parent.parent
    return isinstance(parent, ast.Join) and not parent.args.get("side")


RULE = StoredInScope()
