"""Read-only databases: SQLite, PostgreSQL, DuckDB and MySQL/MariaDB behind one interface.

::

    from sqlmend.db import connect
    with connect("x.sqlite" | "postgresql://..." | "duckdb:///x.duckdb" | "mysql://...") as db:
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
from urllib.parse import quote, unquote

from sqlmend.db.base import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT, Database, quote_ident
from sqlmend.db.schema import parse_schemas
from sqlmend.db.values import MODES, ValueIndex, ValueMatch
from sqlmend.errors import ConfigError, DatabaseNotFoundError

#: File endings :func:`connect` opens as DuckDB (any other path is a SQLite file).
DUCKDB_SUFFIXES = (".duckdb", ".ddb")
#: URL schemes of a MySQL or MariaDB server (``db/mysql.py``, imported only for them: PyMySQL is an extra).
MYSQL_SCHEMES = ("mysql://", "mariadb://", "mysql+pymysql://")


_SCHEMAS_PARAM = re.compile(r"([?&])schemas=([^&#]*)&?")


def split_schemas(target: str) -> tuple[str, list[str] | None]:
    """A target without its ``schemas=`` query parameter, and the schemas it names (None: none).

    >>> split_schemas("postgresql://me@h/shop?schemas=sales,hr&sslmode=require")
    ('postgresql://me@h/shop?sslmode=require', ['sales', 'hr'])
    >>> split_schemas("x.sqlite")
    ('x.sqlite', None)
    """
    found = _SCHEMAS_PARAM.search(target)
    if found is None:
        return target, None
    rest = target[:found.start()] + (found.group(1) if found.group(0).endswith("&") else "") + target[found.end():]
    return rest.rstrip("?"), parse_schemas(unquote(found.group(2)))


def with_schemas(target: str, schemas: str | list[str] | None) -> str:
    """``target`` with the schema filter ``schemas`` as its ``schemas=`` query parameter (the one form every
    door passes a database in: a Corrector, a task's ``db``, the MCP configuration); None: unchanged.

    >>> with_schemas("postgresql://me@h/shop", ["sales", "hr"])
    'postgresql://me@h/shop?schemas=sales,hr'

    Raises:
        ConfigError: names that are not schema names.
    """
    names = parse_schemas(schemas)
    if not names:
        return target
    base, _ = split_schemas(target)
    return f"{base}{'&' if '?' in base else '?'}schemas={','.join(quote(n, safe='') for n in names)}"


def connect(target: str | os.PathLike, schemas: str | list[str] | None = None) -> Database:
    """Open a database read-only, named by a path or URL.

    Args:
        target: ``path/to/x.sqlite`` (or ``sqlite:///path``), ``postgresql://...``
            (or ``postgres://``), ``duckdb:///path/x.duckdb`` or a path ending in ``.duckdb``,
            ``mysql://user:pass@host:port/db`` (or ``mariadb://``; needs the ``mysql`` extra). A
            ``schemas=sales,hr`` query parameter (``postgresql://.../shop?schemas=sales,hr``) is the
            schema filter: only those schemas are read (PostgreSQL and DuckDB read every schema the login
            may read, MySQL the URL's database, without one).
        schemas: the schema filter, as a list (the same as the parameter).

    Returns:
        An open :class:`Database`; use it as a context manager.

    Raises:
        DatabaseNotFoundError: the file or database does not exist.
        DatabaseError: it cannot be opened.
        ConfigError: a schema filter on a SQLite file.
    """
    text, named = split_schemas(with_schemas(os.fspath(target), schemas))
    low = text.lower()
    if low.startswith(("postgresql://", "postgres://")):
        from sqlmend.db.postgres import PostgresDatabase

        return PostgresDatabase(text, schemas=named)
    if low.startswith(MYSQL_SCHEMES):
        try:
            from sqlmend.db.mysql import MySQLDatabase
        except ImportError as e:
            raise ConfigError("a mysql:// database needs PyMySQL: pip install 'sqlmend[mysql]'") from e

        return MySQLDatabase(text, schemas=named)
    if low.startswith("duckdb://"):
        from sqlmend.db.duckdb import DuckDBDatabase

        return DuckDBDatabase(text[len("duckdb://"):], schemas=named)
    if low.startswith("sqlite://"):
        text = text[len("sqlite://"):]
    elif low.endswith(DUCKDB_SUFFIXES):
        from sqlmend.db.duckdb import DuckDBDatabase

        return DuckDBDatabase(text, schemas=named)
    if named:
        raise ConfigError(f"a schema filter needs a PostgreSQL, DuckDB or MySQL database (a SQLite file has one "
                          f"schema): {text}")
    from sqlmend.db.sqlite import SqliteDatabase

    return SqliteDatabase(text)


#: File endings of a benchmark database, in the order they are tried.
BENCHMARK_EXTENSIONS = (".sqlite", ".db", ".sqlite3")

_PLAIN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}")


def is_plain_id(db_id: object) -> bool:
    """True for a plain database name: letters, digits, ``_``, ``.``, ``-`` (not first), no ``..``.

    >>> is_plain_id("concert_singer"), is_plain_id("../etc"), is_plain_id("a/b")
    (True, False, False)
    """
    return isinstance(db_id, str) and bool(_PLAIN_ID.fullmatch(db_id)) and ".." not in db_id


def check_db_id(db_id: str) -> str:
    """Refuse a database id that is not a plain name (it is joined into a path under a root).

    Args:
        db_id: the id a task or a client gave.

    Returns:
        The id, unchanged.

    Raises:
        ConfigError: not a plain name (:func:`is_plain_id`); the message names the id
            (shortened), never a path.
    """
    if not is_plain_id(db_id):
        raise ConfigError(f"invalid database id {repr(db_id)[:60]}: a database id is a plain name "
                          "(letters, digits, '_', '.', '-'; no '..'; at most 128)")
    return db_id


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
    if not is_plain_id(db_id):
        raise DatabaseNotFoundError(f"invalid database id {db_id!r}: a plain name is expected")
    folder = Path(root).expanduser() / db_id
    for ext in BENCHMARK_EXTENSIONS:
        path = folder / f"{db_id}{ext}"
        if path.is_file():
            return path
    raise DatabaseNotFoundError(f"database {db_id!r} not found")


__all__ = ["DEFAULT_MAX_ROWS", "DEFAULT_TIMEOUT", "MODES", "Database", "ValueIndex", "ValueMatch",
           "BENCHMARK_EXTENSIONS", "DUCKDB_SUFFIXES", "benchmark_db", "check_db_id", "connect", "is_plain_id", "quote_ident",
           "split_schemas", "with_schemas"]
