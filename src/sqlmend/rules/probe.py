"""Small read-only questions the rules ask the database, each answered once per connection.

Every probe is a query the engine itself evaluates, so its answer follows the
engine's own comparison rules (SQLite's type affinity, PostgreSQL's collation):
"does ``t.c = 'x'`` match any row?" is asked as exactly that predicate.
Questions about stored text values ("which spellings of 'x' does the column
hold?", "which columns hold 'x'?") go to the database's value index instead
(``db.value_index()``, see :mod:`sqlmend.rules.values`); a probe asks only what
the index cannot answer (numbers, type affinity, joins, counts).
"""

from __future__ import annotations

from typing import Any

from sqlmend.db.base import quote_ident
from sqlmend.errors import DatabaseError
from sqlmend.types import Schema


class Probe:
    """Cached probes on one open database.

    Args:
        db: an open database (``sqlmend.db.connect``).
        schema: its schema.
        timeout: seconds each probe may run.
    """

    def __init__(self, db: Any, schema: Schema, timeout: float = 5.0):
        self.db = db
        self.schema = schema
        self.timeout = timeout
        self._cache: dict[tuple, Any] = {}
        self.queries = 0
        self.dialect = getattr(db, "dialect", "sqlite")

    def _q(self, name: str) -> str:
        return quote_ident(name, self.dialect)

    def _rows(self, text: str, max_rows: int = 100) -> list[tuple] | None:
        key = ("rows", text, max_rows)
        if key not in self._cache:
            self.queries += 1
            try:
                self._cache[key] = self.db.execute(text, timeout=self.timeout, max_rows=max_rows).rows
            except DatabaseError:
                self._cache[key] = None
        return self._cache[key]

    def runs(self, text: str) -> bool:
        """Whether the engine runs ``text`` (a whole query; its first row is fetched at most)."""
        return self._rows(text, 1) is not None

    def matches(self, table: str, column: str, op_sql: str, literal_sql: str) -> bool | None:
        """Whether ``column <op> literal`` holds for at least one row of ``table``.

        Args:
            table: schema table.
            column: schema column.
            op_sql: the operator as SQL (``=``, ``<>``, ``LIKE``...).
            literal_sql: the literal as written in the query.

        Returns:
            True / False, or None when the probe failed.
        """
        rows = self._rows(f"SELECT 1 FROM {self._q(table)} WHERE {self._q(column)} {op_sql} "
                          f"{literal_sql} LIMIT 1", 1)
        return None if rows is None else bool(rows)

    def non_null_count(self, table: str, column: str) -> int:
        """How many rows of ``table`` have a value in ``column`` (capped at 1,000)."""
        rows = self._rows(f"SELECT count(*) FROM (SELECT 1 FROM {self._q(table)} WHERE "
                          f"{self._q(column)} IS NOT NULL LIMIT 1000) AS s", 1)
        return int(rows[0][0]) if rows else 0

    def sample(self, table: str, column: str, limit: int = 50) -> list[Any]:
        """Up to ``limit`` distinct non-null values of a column."""
        rows = self._rows(f"SELECT DISTINCT {self._q(column)} FROM {self._q(table)} WHERE "
                          f"{self._q(column)} IS NOT NULL LIMIT {limit}", limit)
        return [r[0] for r in rows or []]

    def joinable(self, left: tuple[str, str], right: tuple[str, str]) -> bool | None:
        """Whether any row of ``left`` table pairs with a row of ``right`` under ``l.x = r.y``."""
        (lt, lc), (rt, rc) = left, right
        rows = self._rows(f"SELECT 1 FROM {self._q(lt)} AS l JOIN {self._q(rt)} AS r ON "
                          f"l.{self._q(lc)} = r.{self._q(rc)} LIMIT 1", 1)
        return None if rows is None else bool(rows)

    def included(self, left: tuple[str, str], right: tuple[str, str]) -> bool | None:
        """Whether ``left`` column holds values, every one of them also a value of ``right`` (an
        inclusion dependency: the data's own evidence of a foreign key no schema declares)."""
        (lt, lc), (rt, rc) = left, right
        if not self.non_null_count(lt, lc):
            return False
        rows = self._rows(f"SELECT 1 FROM {self._q(lt)} AS l WHERE l.{self._q(lc)} IS NOT NULL AND NOT EXISTS "
                          f"(SELECT 1 FROM {self._q(rt)} AS r WHERE r.{self._q(rc)} = l.{self._q(lc)}) LIMIT 1", 1)
        return None if rows is None else not rows
