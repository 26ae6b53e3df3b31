"""Read-only databases: SQLite, PostgreSQL and DuckDB behind one interface.

::

    from sqlmend.db import connect
    with connect("x.sqlite" | "postgresql://..." | "duckdb:///x.duckdb") as db:
        r = db.execute("SELECT ...", timeout=30.0, max_rows=10_000)  # types.ExecResult
        db.schema()                    # types.Schema
        vi = db.value_index()          # built once, cached on disk
        vi.find("singer", "gender", "F", mode="prefix")
        db.profile("singer", "age")    # types.ColumnProfile

Every query is checked to be a single read-only SELECT/WITH before it reaches
the engine, and every engine refuses writes again on its own.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from sqlmend.db.base import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT, Database, quote_ident
from sqlmend.db.values import MODES, ValueIndex, ValueMatch
from sqlmend.errors import DatabaseNotFoundError

_DUCKDB_SUFFIXES = (".duckdb", ".ddb")


def connect(target: str | os.PathLike) -> Database:
    """Open a database read-only, named by a path or URL.

    Args:
        target: ``path/to/x.sqlite`` (or ``sqlite:///path``), ``postgresql://...``
            (or ``postgres://``), ``duckdb:///path/x.duckdb`` or a path ending in ``.duckdb``.

    Returns:
        An open :class:`Database`; use it as a context manager.

    Raises:
        DatabaseNotFoundError: the file or database does not exist.
        DatabaseError: it cannot be opened.
    """
    text = os.fspath(target)
    low = text.lower()
    if low.startswith(("postgresql://", "postgres://")):
        from sqlmend.db.postgres import PostgresDatabase

        return PostgresDatabase(text)
    if low.startswith("duckdb://"):
        from sqlmend.db.duckdb import DuckDBDatabase

        return DuckDBDatabase(text[len("duckdb://"):])
    if low.startswith("sqlite://"):
        text = text[len("sqlite://"):]
    elif low.endswith(_DUCKDB_SUFFIXES):
        from sqlmend.db.duckdb import DuckDBDatabase

        return DuckDBDatabase(text)
    from sqlmend.db.sqlite import SqliteDatabase

    return SqliteDatabase(text)


#: File endings of a benchmark database, in the order they are tried.
BENCHMARK_EXTENSIONS = (".sqlite", ".db", ".sqlite3")

_PLAIN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}")


def benchmark_db(root: str | os.PathLike, db_id: str) -> Path:
    """Return the SQLite file of one database of a benchmark laid out as ``<root>/<db_id>/<db_id>.sqlite``.

    This is the one place that layout is built (``.db`` and ``.sqlite3`` files are
    found too). A ``db_id`` must be a plain name: letters, digits, ``_``, ``.``, ``-``,
    never a path.

    Args:
        root: the benchmark's database folder (e.g. ``.../spider/database``).
        db_id: the database id.

    Returns:
        The path of the file.

    Raises:
        DatabaseNotFoundError: ``db_id`` is not a plain name, or the file does not exist
            (the message names the id, not the server's folder).
    """
    if not isinstance(db_id, str) or not _PLAIN_ID.fullmatch(db_id) or ".." in db_id:
        raise DatabaseNotFoundError(f"invalid database id {db_id!r}: a plain name is expected")
    folder = Path(root).expanduser() / db_id
    for ext in BENCHMARK_EXTENSIONS:
        path = folder / f"{db_id}{ext}"
        if path.is_file():
            return path
    raise DatabaseNotFoundError(f"database {db_id!r} not found")


__all__ = ["DEFAULT_MAX_ROWS", "DEFAULT_TIMEOUT", "MODES", "Database", "ValueIndex", "ValueMatch",
           "BENCHMARK_EXTENSIONS", "benchmark_db", "connect", "quote_ident"]
