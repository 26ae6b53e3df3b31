"""Copy a Spider SQLite database into PostgreSQL or DuckDB, for the engine tests.

SQLite's declared types are loose (Spider stores text in INT columns, numbers
in TEXT ones), so each column's target type is chosen from the values it
actually holds: all integers -> BIGINT, all numbers -> DOUBLE PRECISION, any
text -> TEXT (numbers written as SQLite writes them), blobs -> BYTEA/BLOB.
Names are lower-cased, so that unquoted identifiers in transpiled queries
resolve in PostgreSQL. Primary and foreign keys are added where the data
allows (Spider's data breaks some of them).
"""

from __future__ import annotations

import hashlib
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


def read_sqlite(path: Path) -> list[TableCopy]:
    """Read every table of a SQLite file with its keys, converting values to one type per column."""
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
            name=table.name.lower(), columns=[n.lower() for n in names], types=kinds, rows=rows,
            primary_key=[c.lower() for c in table.primary_key],
            foreign_keys=[([c.lower() for c in fk.columns], fk.ref_table.lower(),
                           [c.lower() for c in fk.ref_columns]) for fk in table.foreign_keys]))
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


def _key_statements(table: TableCopy) -> list[str]:
    q = quote_ident
    out = []
    if table.primary_key:
        out.append(f"ALTER TABLE {q(table.name)} ADD PRIMARY KEY ({', '.join(map(q, table.primary_key))})")
    for cols, ref, ref_cols in table.foreign_keys:
        if cols and len(cols) == len(ref_cols):
            out.append(f"ALTER TABLE {q(table.name)} ADD FOREIGN KEY ({', '.join(map(q, cols))}) "
                       f"REFERENCES {q(ref)} ({', '.join(map(q, ref_cols))}) NOT VALID")
    return out


def load_postgres(sqlite_path: Path, admin_url: str, reader: str) -> int:
    """Copy a SQLite file into the (empty) PostgreSQL database of ``admin_url``; grant reads to ``reader``.

    Returns:
        The number of tables copied.
    """
    tables = read_sqlite(sqlite_path)
    with psycopg.connect(admin_url, autocommit=True) as conn:
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
        conn.execute(f"GRANT USAGE ON SCHEMA public TO {reader}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {reader}")
    return len(tables)


def load_duckdb(sqlite_path: Path, target: Path) -> int:
    """Copy a SQLite file into a new DuckDB file.

    Returns:
        The number of tables copied.
    """
    import duckdb

    tables = read_sqlite(sqlite_path)
    conn = duckdb.connect(str(target))
    try:
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


def sha256(path: Path) -> str:
    """Checksum of a file (databases must come out of the hostile tests unchanged)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()
