"""VL08: a name compared with the foreign-key code that stands for it."""

from __future__ import annotations

from sqlmend.rules.base import RuleContext
from sqlmend.rules.joins import key_target
from sqlmend.rules.literals import AbsentLiteral, LiteralRule, literal_finding, misplaced, scope_reads
from sqlmend.rules.values import case_only, holders
from sqlmend.sql.fixes import node_path
from sqlmend.types import Finding


class StoredBehindKey(LiteralRule):
    """The literal is compared with a foreign-key column, but the table that key references stores it.

    The query compares a name with the code that stands for it:
    ``car_makers.Country = 'France'``, where ``Country`` holds country ids and
    the referenced ``countries`` table holds 'france' in ``CountryName``.
    Reported for ``=`` and ``<>`` when the compared column holds no spelling of
    the literal, is a declared foreign key, exactly one column of the referenced
    table stores the literal (as written, or differing only in letter case), no
    table the query already reads stores it (VL07's business), and the rewrite
    changes the query's result. Where the schema declares no key on the column,
    the data may: a table that stores the literal, whose one-column primary key
    holds every value of the compared column (flight_2's ``flights.Airline``
    holds ``airlines.uid`` values), is the referenced table when it is the only
    such table. The fix looks the key up, which keeps the
    query's rows and their multiplicity. Fix: ``col IN (SELECT key FROM table
    WHERE column = value)`` (``NOT IN`` for ``<>``).

    Anti-pattern::

        SELECT count(*) FROM car_makers WHERE Country = 'France'

    Fixed::

        SELECT count(*) FROM car_makers WHERE Country IN (SELECT CountryId FROM countries WHERE CountryName = 'france')
    """

    code = "VL08"
    name = "value.stored_behind_key"
    error_type = "value_error"
    severity = "strict"
    fixable = True

    replaces = True

    def check_literal(self, ctx: RuleContext, absent: AbsentLiteral) -> Finding | None:
        if absent.comparison.op not in ("eq", "neq") or not misplaced(ctx, absent):
            return None  # not text, or a variant in the column itself (VL01's or VL06's business)
        value = absent.value
        read = scope_reads(ctx, absent)
        found = holders(ctx, value, exclude=(absent.table, absent.column))
        if any(m.table.lower() in read for m in found):
            return None  # stored in a table the query reads: VL07's business
        found = [m for m in found if m.value == value or case_only(value, m.value)]
        target = _declared(ctx, absent) or _implied(ctx, absent, found)
        if target is None:
            return None
        ref_table, key = target
        behind = [m for m in found if m.table.lower() == ref_table.lower()]
        if len(behind) != 1:
            return None
        match = behind[0]
        node = absent.comparison.node
        fix = {"op": "key_lookup", "path": node_path(node), "expect": node.sql(dialect=ctx.dialect),
               "table": match.table, "key": key, "column": match.column, "value": match.value}
        return literal_finding(
            self, absent, f"({absent.table}.{absent.column} references {match.table}.{key}; "
                          f"{match.table}.{match.column} holds {match.value!r})",
            {"stored": match.value, "holder": f"{match.table}.{match.column}", "key": f"{match.table}.{key}",
             "matches_as_written": 0, "source": "value index"},
            fixes=[fix], also=[match.table, f"{match.table}.{match.column}"])


def _declared(ctx: RuleContext, absent: AbsentLiteral) -> tuple[str, str] | None:
    """The ``(table, key column)``, as the schema spells them, a declared foreign key on the
    compared column references (:func:`sqlmend.rules.joins.key_target`)."""
    table, key = key_target(ctx, absent.table, absent.column)
    if (table, key) == (absent.table.lower(), absent.column.lower()):
        return None
    ref = ctx.schema.table(table)
    col = ref.column(key) if ref is not None else None
    return (ref.name, col.name) if col is not None else None


def _implied(ctx: RuleContext, absent: AbsentLiteral, found: list) -> tuple[str, str] | None:
    """The one holder table whose one-column primary key holds every value of the compared column."""
    keys = set()
    for m in found:
        table = ctx.schema.table(m.table)
        if table is None or m.table.lower() == absent.table.lower() or len(table.primary_key) != 1:
            continue
        if ctx.probe.included((absent.table, absent.column), (table.name, table.primary_key[0])):
            keys.add((table.name, table.primary_key[0]))
    return keys.pop() if len(keys) == 1 else None


RULE = StoredBehindKey()
