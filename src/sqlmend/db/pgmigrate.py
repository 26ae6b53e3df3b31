"""Versioned schema migrations for sqlmend's own PostgreSQL tables (memory store, call log).

A component keeps its migrations as numbered ``.sql`` files in a ``migrations``
folder of its package (``0001_items.sql``, ``0002_...``) and a table that records
the versions applied. :func:`migrate` applies the missing ones in order, in one
transaction holding an advisory lock, so replicas that start together migrate once::

    migrate(conn, "sqlmend.memory", "sqlmend_migrations")   # -> versions applied now
"""

from __future__ import annotations

import re
import threading
from importlib import resources
from typing import Any

#: Advisory lock key of every migration transaction ("sqlmend" in ASCII, as a bigint).
MIGRATION_LOCK = 0x73716C6D656E64
_IDENT = re.compile(r"[a-z_][a-z0-9_]*")

_migrated: set[tuple[str, str]] = set()
_migrated_lock = threading.Lock()


def is_url(location: Any) -> bool:
    """True when a location is a PostgreSQL URL (``postgresql://`` or ``postgres://``)."""
    return isinstance(location, str) and location.lower().startswith(("postgresql://", "postgres://"))


def _table(name: str) -> str:
    if not _IDENT.fullmatch(name):
        raise ValueError(f"not a migrations table name: {name!r}")
    return name


def migrations(package: str) -> list[tuple[int, str, str]]:
    """Return ``(version, name, sql)`` of every file of ``package``'s ``migrations`` folder, in version order."""
    out = []
    for entry in resources.files(package).joinpath("migrations").iterdir():
        if entry.name.endswith(".sql"):
            version = int(entry.name.split("_", 1)[0])
            out.append((version, entry.name, entry.read_text(encoding="utf-8")))
    return sorted(out)


def migrate(conn: Any, package: str, table: str) -> list[int]:
    """Bring one component's schema up to date, in one transaction under the advisory lock.

    Args:
        conn: an open psycopg connection (autocommit).
        package: the package whose ``migrations`` folder holds the files.
        table: the table recording that component's applied versions.

    Returns:
        The versions applied now (empty when the schema was current).
    """
    table = _table(table)
    applied_now: list[int] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute(f"""CREATE TABLE IF NOT EXISTS {table} (version integer PRIMARY KEY,
            name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())""")
        done = {v for (v,) in conn.execute(f"SELECT version FROM {table}")}
        for version, name, text in migrations(package):
            if version in done:
                continue
            conn.execute(text)
            conn.execute(f"INSERT INTO {table} (version, name) VALUES (%s, %s)", (version, name))
            applied_now.append(version)
    return applied_now


def schema_version(conn: Any, table: str) -> int:
    """The highest migration recorded in ``table`` (0 for a database never migrated)."""
    table = _table(table)
    if not conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()[0]:
        return 0
    return conn.execute(f"SELECT coalesce(max(version), 0) FROM {table}").fetchone()[0]


def ensure_schema(conn: Any, url: str, package: str, table: str) -> None:
    """Migrate once per process, URL and component (later connections skip the lock)."""
    with _migrated_lock:
        if (url, table) in _migrated:
            return
        migrate(conn, package, table)
        _migrated.add((url, table))
