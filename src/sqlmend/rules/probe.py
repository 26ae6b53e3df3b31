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

from typing import Any, Callable

from sqlmend.db.base import quote_ident
from sqlmend.db.schema import relation_sql
from sqlmend.errors import DatabaseError, QueryTimeout
from sqlmend.types import Schema


class Probe:
    """Cached probes on one open database.

    Args:
        db: an open database (``sqlmend.db.connect``).
        schema: its schema.
        timeout: seconds each probe may run.
        values: the value index, when there is one (a big column's sample comes from it, not a scan).
    """

    def __init__(self, db: Any, schema: Schema, timeout: float = 5.0, values: Callable[[], Any] | None = None):
        self.db = db
        self.schema = schema
        self.timeout = timeout
        self._cache: dict[tuple, Any] = {}
        self.queries = 0
        self.dialect = getattr(db, "dialect", "sqlite")
        self._values = values or (lambda: None)
        self.bounded: list[str] = []  # probes stopped at their limit (their answer is unknown)

    def _q(self, name: str) -> str:
        return quote_ident(name, self.dialect)

    def _t(self, table: str) -> str:
        """A schema table as the query writes it (schema-qualified where its key is)."""
        return relation_sql(self.schema.table(table) or table, self._q)

    def _rows(self, text: str, max_rows: int = 100) -> list[tuple] | None:
        key = ("rows", text, max_rows)
        if key not in self._cache:
            self.queries += 1
            try:
                self._cache[key] = self.db.execute(text, timeout=self.timeout, max_rows=max_rows).rows
            except DatabaseError as exc:
                if isinstance(exc, QueryTimeout):
                    self.bounded.append(f"a probe stopped at its limit of {self.timeout:g}s, its answer unknown: "
                                        f"{text[:160]}")
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
        rows = self._rows(f"SELECT 1 FROM {self._t(table)} WHERE {self._q(column)} {op_sql} "
                          f"{literal_sql} LIMIT 1", 1)
        return None if rows is None else bool(rows)

    def matching(self, table: str, column: str, literal_sqls: list[str]) -> set[int] | None:
        """Which of many literals ``column = literal`` matches a row for: one query for all of them (a
        CTE of the literals, each compared by the engine's own rules: SQLite gives a VALUES column no
        affinity, as it gives a literal none). None when the probe failed or the engine has no VALUES
        in a CTE (MySQL writes it otherwise): ask one literal at a time then.

        Args:
            table: schema table.
            column: schema column.
            literal_sqls: the literals as written in the query.

        Returns:
            The positions of the literals some row matches.
        """
        if self.dialect not in ("sqlite", "postgres", "duckdb") or not literal_sqls:
            return None
        values = ", ".join(f"({i}, {lit})" for i, lit in enumerate(literal_sqls))
        rows = self._rows(f"WITH sqlmend_l(i, v) AS (VALUES {values}) SELECT i FROM sqlmend_l WHERE EXISTS "
                          f"(SELECT 1 FROM {self._t(table)} AS sqlmend_t WHERE sqlmend_t.{self._q(column)} = "
                          f"sqlmend_l.v)", len(literal_sqls))
        return None if rows is None else {int(r[0]) for r in rows}

    def non_null_count(self, table: str, column: str) -> int:
        """How many rows of ``table`` have a value in ``column`` (capped at 1,000)."""
        rows = self._rows(f"SELECT count(*) FROM (SELECT 1 FROM {self._t(table)} WHERE "
                          f"{self._q(column)} IS NOT NULL LIMIT 1000) AS s", 1)
        return int(rows[0][0]) if rows else 0

    def sample(self, table: str, column: str, limit: int = 50) -> list[Any]:
        """Up to ``limit`` distinct non-null values of a column (a big table's from the value index,
        which read them once, instead of a scan per correction)."""
        vi = self._values()
        head = vi.head(table, column, limit) if vi is not None else None
        if head is not None:
            return head
        rows = self._rows(f"SELECT DISTINCT {self._q(column)} FROM {self._t(table)} WHERE "
                          f"{self._q(column)} IS NOT NULL LIMIT {limit}", limit)
        return [r[0] for r in rows or []]

    def joinable(self, left: tuple[str, str], right: tuple[str, str]) -> bool | None:
        """Whether any row of ``left`` table pairs with a row of ``right`` under ``l.x = r.y``."""
        (lt, lc), (rt, rc) = left, right
        rows = self._rows(f"SELECT 1 FROM {self._t(lt)} AS l JOIN {self._t(rt)} AS r ON "
                          f"l.{self._q(lc)} = r.{self._q(rc)} LIMIT 1", 1)
        return None if rows is None else bool(rows)

    def included(self, left: tuple[str, str], right: tuple[str, str]) -> bool | None:
        """Whether ``left`` column holds values, every one of them also a value of ``right`` (an
        inclusion dependency: the data's own evidence of a foreign key no schema declares)."""
        (lt, lc), (rt, rc) = left, right
        if not self.non_null_count(lt, lc):
            return False
        rows = self._rows(f"SELECT 1 FROM {self._t(lt)} AS l WHERE l.{self._q(lc)} IS NOT NULL AND NOT EXISTS "
                          f"(SELECT 1 FROM {self._t(rt)} AS r WHERE r.{self._q(rc)} = l.{self._q(lc)}) LIMIT 1", 1)
        return None if rows is None else not rows
