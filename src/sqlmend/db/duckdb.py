"""DuckDB files, opened read-only with external access (files, extensions, network) off.

A timer calls the connection's ``interrupt()`` when a query passes its time
limit; the connection stays usable. DuckDB's own memory is capped (``memory_limit``,
:data:`~sqlmend.db.base.ENGINE_MEMORY`) and a result's rows by bytes as well as by count
(:func:`~sqlmend.db.base.fetch_capped`).
"""

from __future__ import annotations

import threading
from pathlib import Path

import duckdb

from sqlmend.db.base import ENGINE_MEMORY, Database, fetch_capped, file_cache_key
from sqlmend.db.schema import INFORMATION_SCHEMA_COLUMNS, assemble_schema
from sqlmend.errors import (DatabaseError, DatabaseNotFoundError, MemoryLimitExceeded, QueryError, QueryTimeout,
                            ReadOnlyViolation)
from sqlmend.types import Schema

_KEYS = """
SELECT CASE constraint_type WHEN 'PRIMARY KEY' THEN 'primary' ELSE 'foreign' END, table_name,
       constraint_column_names, referenced_table, referenced_column_names
FROM duckdb_constraints()
WHERE schema_name = current_schema() AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')
"""


def _lock_configuration(conn: duckdb.DuckDBPyConnection) -> None:
    """Lock the settings (no query may turn external access back on).

    Connections of one process to one file share one database instance: the
    second finds its settings locked already, which is what was asked.
    """
    try:
        conn.execute("SET lock_configuration = true")
    except duckdb.InvalidInputException:
        if not conn.execute("SELECT current_setting('lock_configuration')").fetchone()[0]:
            raise


def _progress_bar_off(conn: duckdb.DuckDBPyConnection) -> None:
    """No progress bar on stderr for a long query (a connection's own setting; a second connection to
    a locked instance cannot set it, and needs not: the bar is drawn only for the connection that asked)."""
    try:
        conn.execute("SET enable_progress_bar = false")
    except duckdb.Error:
        pass


class DuckDBDatabase(Database):
    """A read-only DuckDB database file.

    Args:
        path: the ``.duckdb`` file.

    Raises:
        DatabaseNotFoundError: the file does not exist.
        DatabaseError: the file cannot be opened by DuckDB.
    """

    dialect = "duckdb"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser().resolve()
        super().__init__(str(self.path))
        if not self.path.is_file():
            raise DatabaseNotFoundError(f"no DuckDB database at {self.path}")
        try:
            self._conn = duckdb.connect(str(self.path), read_only=True,
                                        config={"enable_external_access": False,
                                                "autoload_known_extensions": False,
                                                "autoinstall_known_extensions": False,
                                                "memory_limit": f"{ENGINE_MEMORY // 2**20}MB"})
            _progress_bar_off(self._conn)
            _lock_configuration(self._conn)
        except duckdb.Error as e:
            raise DatabaseError(f"cannot open {self.path} with DuckDB: {e}") from e

    def _run(self, sql: str, timeout: float, max_rows: int) -> tuple[list[str], list[tuple], bool]:
        conn = self._conn
        if conn is None:
            raise DatabaseError("connection is closed")
        self._check_statement(conn, sql)
        fired = threading.Event()

        def interrupt() -> None:
            fired.set()
            conn.interrupt()

        timer = threading.Timer(timeout, interrupt)
        timer.daemon = True
        timer.start()
        try:
            cursor = conn.execute(sql)
            columns = [d[0] for d in cursor.description or ()]
            rows = fetch_capped(cursor.fetchmany, len(columns), max_rows) if cursor.description else []
        except duckdb.Error as e:
            if fired.is_set() or isinstance(e, duckdb.InterruptException):
                raise QueryTimeout(f"query interrupted after its time limit of {timeout:g}s",
                                   timeout=timeout) from e
            if isinstance(e, duckdb.OutOfMemoryException):
                raise MemoryLimitExceeded(f"query stopped at DuckDB's memory limit of {ENGINE_MEMORY / 2**20:g} MB: "
                                          f"{e}", timeout=timeout) from e
            message = str(e)
            low = message.lower()
            if isinstance(e, duckdb.PermissionException) or "read-only" in low or "read only" in low:
                raise ReadOnlyViolation(f"DuckDB refused: {message}") from e
            raise QueryError(f"DuckDB: {message}", engine_message=message) from e
        finally:
            timer.cancel()
        return columns, rows[:max_rows], len(rows) > max_rows

    @staticmethod
    def _check_statement(conn: duckdb.DuckDBPyConnection, sql: str) -> None:
        """DuckDB's own parser: exactly one statement, of type SELECT."""
        try:
            statements = conn.extract_statements(sql)
        except duckdb.Error as e:
            message = str(e)
            raise QueryError(f"DuckDB: {message}", engine_message=message) from e
        if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
            kinds = ", ".join(st.type.name for st in statements) or "nothing"
            raise ReadOnlyViolation(f"DuckDB refused: expected one SELECT statement, got {kinds}")

    def _introspect(self) -> Schema:
        return assemble_schema(self.dialect, self._query(INFORMATION_SCHEMA_COLUMNS), self._query(_KEYS))

    def cache_key(self) -> str | None:
        return file_cache_key("duckdb", self.path)
