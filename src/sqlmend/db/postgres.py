"""PostgreSQL, read-only: every query runs in a READ ONLY transaction with a statement_timeout.

Queries go through a server-side cursor (``DECLARE``), so only ``max_rows + 1``
rows ever cross the wire, fetched in chunks that stop past the result's size cap
(:func:`~sqlmend.db.base.fetch_capped`); the cursor's query stops at a row over
:data:`~sqlmend.db.base.MAX_VALUE_BYTES` on the server, before it is sent (:func:`row_capped`), and PostgreSQL itself refuses anything a cursor cannot
hold (no second statement, no DML). Each query's transaction is rolled back.
Connect as a role without write privileges for a third lock.
"""

from __future__ import annotations

import itertools

import psycopg
from psycopg import errors as pg_errors

from sqlmend.db.base import MAX_VALUE_BYTES, Database, fetch_capped, split_qualified, sql_string
from sqlmend.db.schema import INFORMATION_SCHEMA_COLUMNS, assemble_schema
from sqlmend.errors import (DatabaseError, DatabaseNotFoundError, MemoryLimitExceeded, QueryError, QueryTimeout,
                            ReadOnlyViolation)
from sqlmend.types import Schema

_KEYS = """
SELECT CASE con.contype WHEN 'p' THEN 'primary' ELSE 'foreign' END, cl.relname,
  ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY AS k(n, i)
        JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.n ORDER BY k.i),
  rcl.relname,
  ARRAY(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY AS k(n, i)
        JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.n ORDER BY k.i)
FROM pg_constraint con
JOIN pg_class cl ON cl.oid = con.conrelid
JOIN pg_namespace ns ON ns.oid = cl.relnamespace
LEFT JOIN pg_class rcl ON rcl.oid = con.confrelid
WHERE ns.nspname = current_schema() AND con.contype IN ('p', 'f')
ORDER BY cl.relname, con.conname
"""

_cursor_ids = itertools.count()

#: How the server words a row that :func:`row_capped` stopped (in an integer cast's error).
_ROW_OVER = "sqlmend: a row over the memory limit"


def row_capped(sql: str, limit: int = MAX_VALUE_BYTES) -> str:
    """``sql`` as a subquery whose rows stop the query past ``limit`` bytes (``pg_column_size`` of the
    row), so that no row larger than it reaches the client. Its columns, names and order are the
    query's own (the server runs a filter over the subquery's rows as they come).

    >>> row_capped("SELECT 1;", 100).splitlines()[1]
    'SELECT 1'
    """
    body = sql.strip().rstrip(";").rstrip()
    return (f"SELECT * FROM (\n{body}\n) AS sqlmend_q WHERE CASE WHEN pg_column_size(sqlmend_q) > {limit} "
            f"THEN CAST('{_ROW_OVER}: ' || pg_column_size(sqlmend_q) AS int) = 0 ELSE true END")


class PostgresDatabase(Database):
    """A PostgreSQL database, read through READ ONLY transactions.

    Args:
        url: a libpq URL or conninfo string (``postgresql://user@host:port/db``).
        connect_timeout: seconds to wait for the server.

    Raises:
        DatabaseNotFoundError: the server answers but the database does not exist.
        DatabaseError: the server cannot be reached or refuses the login.
    """

    dialect = "postgres"

    def __init__(self, url: str, connect_timeout: float = 10.0) -> None:
        super().__init__(url)
        try:
            self._conn = psycopg.connect(url, autocommit=False, connect_timeout=int(connect_timeout))
        except psycopg.OperationalError as e:
            if "does not exist" in str(e):
                raise DatabaseNotFoundError(f"PostgreSQL database not found: {e}") from e
            raise DatabaseError(f"cannot connect to PostgreSQL: {e}") from e
        self._conn.read_only = True

    def _run(self, sql: str, timeout: float, max_rows: int) -> tuple[list[str], list[tuple], bool]:
        conn = self._conn
        if conn is None:
            raise DatabaseError("connection is closed")
        try:
            with conn.cursor() as setup:
                setup.execute(f"SET LOCAL statement_timeout = {max(1, int(timeout * 1000))}")
            with conn.cursor(name=f"sqlmend_{next(_cursor_ids)}") as cursor:
                cursor.execute(row_capped(sql))
                columns = [d.name for d in cursor.description or ()]
                rows = fetch_capped(cursor.fetchmany, len(columns), max_rows, value_bytes=None)
        except pg_errors.QueryCanceled as e:
            raise QueryTimeout(f"query interrupted after its time limit of {timeout:g}s",
                               timeout=timeout) from e
        except (pg_errors.OutOfMemory, pg_errors.ProgramLimitExceeded) as e:
            raise MemoryLimitExceeded(f"query stopped at PostgreSQL's memory limit: {str(e).strip()}",
                                      timeout=timeout) from e
        except (pg_errors.ReadOnlySqlTransaction, pg_errors.InsufficientPrivilege) as e:
            raise ReadOnlyViolation(f"PostgreSQL refused: {e}") from e
        except psycopg.OperationalError as e:
            raise DatabaseError(f"PostgreSQL connection failed: {e}") from e
        except psycopg.Error as e:
            message = str(e).strip()
            if isinstance(e, pg_errors.InvalidTextRepresentation) and _ROW_OVER in message:
                raise MemoryLimitExceeded(f"query stopped at its memory limit: a row over "
                                          f"{MAX_VALUE_BYTES / 2**20:g} MB", timeout=timeout) from e
            raise QueryError(f"PostgreSQL: {message}", engine_message=message) from e
        finally:
            if not conn.closed:
                conn.rollback()
        return columns, rows[:max_rows], len(rows) > max_rows

    def alive(self) -> bool:
        """Whether the server still answers on this connection (one round trip; false after a
        restart of the server or the end of this session)."""
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            return False
        try:
            conn.execute("SELECT 1")
            conn.rollback()
        except psycopg.Error:
            return False
        return True

    def has_function(self, name: str) -> bool:
        """Whether the server has a function ``name`` (``schema.name``) in any schema (``pg_proc``, asked
        now: one round trip, only for a name the read-only list does not know)."""
        schema, bare = split_qualified(name)
        where = f"p.proname = {sql_string(bare)}" + (f" AND n.nspname = {sql_string(schema)}" if schema else "")
        return bool(self._query("SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n "
                                f"ON n.oid = p.pronamespace WHERE {where})")[0][0])

    def _introspect(self) -> Schema:
        return assemble_schema(self.dialect, self._query(INFORMATION_SCHEMA_COLUMNS), self._query(_KEYS))

    def cache_key(self) -> str | None:
        """None: a server database has no cheap change stamp, so its value index stays in memory."""
        return None
