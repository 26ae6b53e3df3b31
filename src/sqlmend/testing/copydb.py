"""Copy a Spider SQLite database into PostgreSQL, DuckDB or MySQL/MariaDB, for the engine tests and
``sqlmend bench engines``.

SQLite's declared types are loose (Spider stores text in INT columns, numbers
in TEXT ones), so each column's target type is chosen from the values it
actually holds: all integers -> BIGINT, all numbers -> DOUBLE PRECISION, any
text -> TEXT (numbers written as SQLite writes them), blobs -> BYTEA/BLOB.
Names are lower-cased, so that unquoted identifiers in transpiled queries
resolve in PostgreSQL (and MySQL's server is started with lower-case table names).
Primary and foreign keys are added where the data allows (Spider's data breaks some of them).

MySQL's text columns take one collation, :data:`MYSQL_COLLATION` by default: binary and
without trailing-space padding, SQLite's own comparison of text ('France' <> 'france',
'AKI ' <> 'AKI'), so that a query means on the copy what it means on the SQLite file. A
server's default collation (``utf8mb4_general_ci``) compares without case and pads trailing
spaces: :func:`load_mysql` takes it as ``collation=`` to measure that difference.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from sqlmend.db import connect, quote_ident


@dataclass
class TableCopy:
    name: str
    columns: list[str]
    types: list[str]  # "int" | "float" | "text" | "blob"
    rows: list[tuple]
    primary_key: list[str] = field(default_factory=list)
    foreign_keys: list[tuple[list[str], str, list[str]]] = field(default_factory=list)


def _kind(values: list) -> str:
    kinds = {type(v) for v in values if v is not None}
    if kinds <= {int}:
        return "int"
    if kinds <= {int, float}:
        return "float"
    if bytes in kinds:
        return "blob"
    return "text"


def _convert(value: object, kind: str) -> object:
    if value is None:
        return None
    if kind == "text" and not isinstance(value, str):
        return str(value)
    if kind == "float":
        return float(value)
    return value


def read_sqlite(path: Path, lower_columns: bool = True) -> list[TableCopy]:
    """Read every table of a SQLite file with its keys, converting values to one type per column.

    Table names are lower-cased; column names too unless ``lower_columns`` is False (MySQL compares
    column names without case, so its copy keeps SQLite's spelling).
    """
    def col(name: str) -> str:
        return name.lower() if lower_columns else name

    with connect(path) as db:
        schema = db.schema()
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.text_factory = lambda b: b.decode("utf-8", errors="replace")
    tables = []
    for table in schema.tables:
        names = [c.name for c in table.columns]
        rows = conn.execute(f"SELECT {', '.join(quote_ident(n) for n in names)} FROM {quote_ident(table.name)}").fetchall()
        kinds = [_kind([r[i] for r in rows]) for i in range(len(names))]
        rows = [tuple(_convert(v, k) for v, k in zip(r, kinds)) for r in rows]
        tables.append(TableCopy(
            name=table.name.lower(), columns=[col(n) for n in names], types=kinds, rows=rows,
            primary_key=[col(c) for c in table.primary_key],
            foreign_keys=[([col(c) for c in fk.columns], fk.ref_table.lower(),
                           [col(c) for c in fk.ref_columns]) for fk in table.foreign_keys]))
    conn.close()
    return tables


_PG_TYPES = {"int": "BIGINT", "float": "DOUBLE PRECISION", "text": "TEXT", "blob": "BYTEA"}
_DUCK_TYPES = {"int": "BIGINT", "float": "DOUBLE", "text": "VARCHAR", "blob": "BLOB"}


def _create(table: TableCopy, types: dict[str, str], keys: bool = False) -> str:
    q = quote_ident
    parts = [f"{q(c)} {types[k]}" for c, k in zip(table.columns, table.types)]
    if keys and table.primary_key:
        parts.append(f"PRIMARY KEY ({', '.join(map(q, table.primary_key))})")
    if keys:
        parts += [f"FOREIGN KEY ({', '.join(map(q, cols))}) REFERENCES {q(ref)} ({', '.join(map(q, ref_cols))})"
                  for cols, ref, ref_cols in table.foreign_keys if cols and len(cols) == len(ref_cols)]
    return f"CREATE TABLE {q(table.name)} ({', '.join(parts)})"


def _key_statements(table: TableCopy, dialect: str = "postgres") -> list[str]:
    """ALTER TABLE statements adding the keys; PostgreSQL's foreign keys skip checking the rows already
    there (NOT VALID; MySQL's loader turns foreign_key_checks off instead)."""
    def q(name: str) -> str:
        return quote_ident(name, dialect)

    unchecked = " NOT VALID" if dialect == "postgres" else ""
    out = []
    if table.primary_key:
        out.append(f"ALTER TABLE {q(table.name)} ADD PRIMARY KEY ({', '.join(map(q, table.primary_key))})")
    for cols, ref, ref_cols in table.foreign_keys:
        if cols and len(cols) == len(ref_cols):
            out.append(f"ALTER TABLE {q(table.name)} ADD FOREIGN KEY ({', '.join(map(q, cols))}) "
                       f"REFERENCES {q(ref)} ({', '.join(map(q, ref_cols))}){unchecked}")
    return out


def load_postgres(sqlite_path: Path, admin_url: str, reader: str, schema: str | None = None) -> int:
    """Copy a SQLite file into the (empty) PostgreSQL database of ``admin_url``; grant reads to ``reader``.

    Args:
        schema: the schema to copy it into, created (default ``public``): several files loaded so into
            one database make a warehouse (``sqlmend bench warehouse``).

    Returns:
        The number of tables copied.
    """
    tables = read_sqlite(sqlite_path)
    target = schema or "public"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if schema:
            conn.execute(f"CREATE SCHEMA {quote_ident(schema)}")
            conn.execute(f"SET search_path TO {quote_ident(schema)}")
        for table in tables:
            conn.execute(_create(table, _PG_TYPES))
            cols = ", ".join(quote_ident(c) for c in table.columns)
            with conn.cursor() as cur, cur.copy(f"COPY {quote_ident(table.name)} ({cols}) FROM STDIN") as copy:
                for row in table.rows:
                    copy.write_row([v.replace("\x00", "") if isinstance(v, str) else v for v in row])
        for statement in (s for t in tables for s in _key_statements(t)):
            try:  # Spider's data breaks some keys: keep the ones it satisfies
                conn.execute(statement)
            except psycopg.Error:
                pass
        conn.execute(f"GRANT USAGE ON SCHEMA {quote_ident(target)} TO {reader}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {quote_ident(target)} TO {reader}")
    return len(tables)


def load_duckdb(sqlite_path: Path, target: Path, schema: str | None = None) -> int:
    """Copy a SQLite file into a DuckDB file (new, or one more schema of it).

    Args:
        schema: the schema to copy it into, created (default ``main``).

    Returns:
        The number of tables copied.
    """
    import duckdb

    tables = read_sqlite(sqlite_path)
    conn = duckdb.connect(str(target))
    try:
        if schema:
            conn.execute(f"CREATE SCHEMA {quote_ident(schema)}")
            conn.execute(f"SET schema = {quote_ident(schema)}")
        for table in tables:
            for keys in (True, False):  # with its keys when the data satisfies them
                try:
                    conn.execute("BEGIN")
                    conn.execute(_create(table, _DUCK_TYPES, keys=keys))
                    if table.rows:
                        marks = ", ".join("?" for _ in table.columns)
                        conn.executemany(f"INSERT INTO {quote_ident(table.name)} VALUES ({marks})", table.rows)
                    conn.execute("COMMIT")
                    break
                except duckdb.Error:
                    conn.execute("ROLLBACK")
    finally:
        conn.close()
    return len(tables)


#: SQLite's text comparison on MariaDB: binary, trailing spaces significant (MySQL 8: utf8mb4_0900_bin).
MYSQL_COLLATION = "utf8mb4_nopad_bin"
_MYSQL_TYPES = {"int": "BIGINT", "float": "DOUBLE", "text": "LONGTEXT", "blob": "LONGBLOB"}
#: Longest text key column MySQL can index (3072 bytes of utf8mb4).
_MYSQL_KEY_CHARS = 768


def _mysql_quote(name: str) -> str:
    return quote_ident(name, "mysql")


def _mysql_create(table: TableCopy, collation: str) -> str:
    """CREATE TABLE in MySQL; a text column of a key is a VARCHAR as long as its longest value
    (MySQL indexes no TEXT column whole)."""
    q = _mysql_quote
    keyed = set(table.primary_key) | {c for cols, _, _ in table.foreign_keys for c in cols}
    parts = []
    for i, (name, kind) in enumerate(zip(table.columns, table.types)):
        sql_type = _MYSQL_TYPES[kind]
        if kind == "text" and name in keyed:
            longest = max((len(r[i]) for r in table.rows if r[i] is not None), default=1)
            sql_type = f"VARCHAR({max(1, longest)})" if longest <= _MYSQL_KEY_CHARS else sql_type
        parts.append(f"{q(name)} {sql_type}")
    return (f"CREATE TABLE {q(table.name)} ({', '.join(parts)}) ENGINE=InnoDB "
            f"DEFAULT CHARSET=utf8mb4 COLLATE={collation}")


def load_mysql(sqlite_path: Path, conn: object, database: str, reader: str | None = None,
               collation: str = MYSQL_COLLATION) -> int:
    """Copy a SQLite file into a new MySQL/MariaDB database; grant ``reader`` SELECT on it only.

    Args:
        sqlite_path: the Spider file.
        conn: a PyMySQL connection with the right to create databases, in autocommit.
        database: the database to create (it must not exist).
        reader: a user to grant SELECT on the database (``'reader'@'%'``), or None.
        collation: the collation of every text column (:data:`MYSQL_COLLATION`: SQLite's).

    Returns:
        The number of tables copied.
    """
    import pymysql

    q = _mysql_quote
    tables = read_sqlite(sqlite_path, lower_columns=False)
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {q(database)} CHARACTER SET utf8mb4 COLLATE {collation}")
        cur.execute(f"USE {q(database)}")
        cur.execute("SET SESSION foreign_key_checks = 0")  # keys the data breaks still describe the schema
        for table in tables:
            cur.execute(_mysql_create(table, collation))
            if table.rows:
                marks = ", ".join("%s" for _ in table.columns)
                cur.executemany(f"INSERT INTO {q(table.name)} VALUES ({marks})", table.rows)
        for statement in (s for t in tables for s in _key_statements(t, "mysql")):
            try:  # Spider's data breaks some keys (duplicates, mixed types): keep the ones it allows
                cur.execute(statement)
            except pymysql.err.MySQLError:
                pass
        if reader:
            cur.execute(f"GRANT SELECT ON {q(database)}.* TO '{reader}'@'%'")
    return len(tables)
