"""EX04: the query is written in another SQL dialect; read in that dialect, it runs here."""

from __future__ import annotations

from sqlmend.rules.base import Rule, RuleContext
from sqlmend.sql.foreign import readings
from sqlmend.types import Finding

#: Failures a dialect's spelling explains: the engine cannot parse it, or lacks a function. An
#: unknown name is not one of them (a dialect that reads "x" as a string would hide it).
_FAILURES = {"syntax", "function", "other"}


class ForeignDialect(Rule):
    """The query fails here but is valid in another SQL dialect: written in this database's dialect, it runs.

    ``TOP 3``, ``ILIKE``, ``FETCH FIRST 5 ROWS ONLY``, ``UCASE(x)``, ``LEN(x)``, ``x::numeric``,
    ``CONCAT(a, b)``, ``CONTAINS(a, 'x')`` or ``YEAR(d)`` on an engine that knows none of them. The
    query is read in the database's own dialect, then in other common ones
    (:data:`sqlmend.sql.foreign.READERS`), and written in the database's dialect with its functions
    mapped (:func:`sqlmend.sql.foreign.readings`); the first reading the engine runs is the fix. A
    reading must keep every name, value and clause the query writes, so the fix never drops a
    filter or adds a table. Fix: the query as that reading writes it.

    Anti-pattern::

        SELECT TOP 3 Name FROM country ORDER BY Population DESC

    Fixed::

        SELECT Name FROM country ORDER BY Population DESC LIMIT 3
    """

    code = "EX04"
    name = "execution.foreign_dialect"
    error_type = "clause_error"
    severity = "strict"
    fixable = True

    def check(self, ctx: RuleContext) -> list[Finding]:
        kind, _ = ctx.failure
        if kind not in _FAILURES:
            return []
        tried = []
        for reading in readings(ctx.sql, ctx.dialect):
            tried.append(reading.dialect)
            if not ctx.probe.runs(reading.sql):
                continue
            return [self.finding(
                detail=f"(read as {reading.dialect}: {reading.sql})",
                evidence={"engine": ctx.exec_error, "read_as": reading.dialect, "written": reading.sql,
                          "tried": tried},
                fixes=[{"op": "transpile", "path": "", "expect": ctx.sql, "read": reading.dialect}])]
        return []


RULE = ForeignDialect()
