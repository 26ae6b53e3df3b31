"""VL11: a date literal written in another format than the column stores its dates in."""

from __future__ import annotations

from typing import Any

from sqlmend.rules.base import Rule, RuleContext
from sqlmend.rules.dates import (date_part, has_time, in_format, literal_dates, question_dates, sortable,
                                 stored_format, written_in)
from sqlmend.rules.literals import changes_result
from sqlmend.sql import ast
from sqlmend.sql.fixes import node_path
from sqlmend.types import Finding

#: Operators of a comparison whose literal is bound to one date, and those that order dates.
_EQUAL = {"eq", "neq", "in", "not_in"}
_ORDER = {"gt", "gte", "lt", "lte", "between"}


class DateFormat(Rule):
    """A date is written in another format than the column stores its dates in: the stored format is meant.

    The column's values (from the value index) all write their dates one way, e.g.
    '2024-03-15'; the literal writes a date another way ('2024/03/01', '03/15/2024', 'March 15,
    2024'), so as text it matches no row (``=``) or orders wrongly (``<``, ``>``, BETWEEN). The
    literal is written in the stored format. A literal whose day and month can be read either way
    ('03/04/2024') is bound to the reading the question names ("after April 3, 2024"), else only in
    an equality whose one reading is stored; a range is rewritten only when the stored format sorts
    as its dates do (year first). Reported
    when the rewrite changes the query's result. Fix: the date in the stored format.

    Anti-pattern::

        SELECT count(*) FROM Ref_Calendar WHERE Calendar_Date >= '1986/01/01'

    Fixed::

        SELECT COUNT(*) FROM Ref_Calendar WHERE Calendar_Date >= '1986-01-01'
    """

    code = "VL11"
    name = "value.date_format"
    error_type = "value_error"
    severity = "strict"
    fixable = True

    def _format(self, ctx: RuleContext, table: str, column: str) -> str | None:
        key = ("date_format", table.lower(), column.lower())
        if key not in ctx.memo:
            vi = ctx.values
            ctx.memo[key] = stored_format(vi.values(table, column)) if vi is not None else None
        return ctx.memo[key]

    def _literals(self, ctx: RuleContext) -> list[tuple[Any, str, Any, list[Any]]]:
        """``(column ref, op, comparison node, [literal nodes])`` of every comparison with text literals."""
        analysis = ctx.analysis
        out = [(c.column, c.op, c.node, c.literals) for c in analysis.comparisons() if c.op in _EQUAL | _ORDER]
        for node in analysis.tree.find_all(ast.Between):
            ref = analysis.ref(node.this) if isinstance(node.this, ast.Column) else None
            bounds = [node.args.get("low"), node.args.get("high")]
            if ref is not None and all(b is not None and analysis.as_literal(b) is not None for b in bounds):
                out.append((ref, "between", node, bounds))
        return out

    def _bound(self, ctx: RuleContext, table: str, column: str, fmt: str, op: str, text: str) -> str | None:
        """The literal written in the stored format, or None when it writes no date or not one date."""
        dates = literal_dates(text)
        if not dates:
            return None
        full = op in _EQUAL or has_time(text)
        target = fmt if full else date_part(fmt)
        if len(dates) > 1:  # day and month either way: the question or a stored value may tell
            named = {d for d in dates if d.replace(hour=0, minute=0, second=0, microsecond=0)
                     in question_dates(ctx.question)}
            if len(named) == 1:
                return in_format(next(iter(named)), target)
            if op not in _EQUAL or ctx.values is None:
                return None
            stored = [w for d in dates if ctx.values.contains(table, column, w := in_format(d, fmt))]
            return stored[0] if len(stored) == 1 else None
        return in_format(next(iter(dates)), target)

    def check(self, ctx: RuleContext) -> list[Finding]:
        if ctx.analysis.tree is None or ctx.values is None:
            return []
        out = []
        for ref, op, node, literals in self._literals(ctx):
            if ref.status != "ok":
                continue
            fmt = None
            for lit in literals:
                value = ctx.analysis.as_literal(lit)
                if not isinstance(value, str) or not literal_dates(value):
                    continue
                fmt = fmt or self._format(ctx, ref.table, ref.column)
                if fmt is None or (op in _ORDER and not sortable(fmt)):
                    break
                if written_in(value, fmt):
                    continue
                bound = self._bound(ctx, ref.table, ref.column, fmt, op, value)
                if bound is None or bound == value:
                    continue
                written = lit.sql(dialect=ctx.dialect)
                out.append(self.finding(
                    detail=f"({ref.table}.{ref.column} stores dates as {fmt!r}: {value!r} is {bound!r})",
                    location=node.sql(dialect=ctx.dialect), schema_refs=[ref.table, f"{ref.table}.{ref.column}"],
                    evidence={"literal": value, "stored": bound, "stored_format": fmt,
                              "stored_sample": ctx.values.values(ref.table, ref.column)[:5]},
                    fixes=[{"op": "replace_literal", "path": node_path(lit), "expect": written, "value": bound}]))
        if out and not changes_result(ctx, [f.fixes[0] for f in out]):
            return []
        return out


RULE = DateFormat()
