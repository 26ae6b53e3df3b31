"""The repair memory in PostgreSQL: one store shared by several service replicas (MIRA §3.2.3).

The folder store (:class:`sqlmend.memory.store.MemoryStore`) keeps one SQLite
file per database on one machine; this one keeps every database's items in one
PostgreSQL database, so that replicas of ``sqlmend serve``, batch runs and
reviewers read and write the same memory::

    with PgMemoryStore("postgresql://sqlmend@db/sqlmend", "concert_singer") as store:
        store.add(item)            # insert, or update the item with the same key
        store.items()              # this database's items, embeddings included

* **Schema migrations** are the numbered files of ``migrations/`` applied in
  order, each once, inside one transaction holding an advisory lock: replicas
  that start together apply them once (:func:`migrate`); table
  ``sqlmend_migrations`` records the versions applied.
* **Keys and transactions**: an item's key is ``(namespace, db_id, id)``; the
  id is a hash of the repair, so two writers adding the same item make one row
  (``INSERT ... ON CONFLICT DO UPDATE``), and writers of different items never
  block or lose each other's rows. ``clear`` deletes in one transaction.
* **Retrieval per database**: every read names its namespace and database
  (an index on ``(namespace, db_id, seq)``); :meth:`PgMemoryStore.revision`
  is one index lookup that changes on every write or clear, so a reader caches
  items and reloads only when it changed.
* **Embeddings** are stored with the item (``real[]``).
"""

from __future__ import annotations

import json
import threading
from importlib import resources
from typing import Any

from sqlmend.errors import ConfigError, DatabaseError
from sqlmend.memory.items import MemoryItem
from sqlmend.memory.store import StoreBase, item_body

#: Advisory lock key of the migration transaction ("sqlmend" in ASCII, as a bigint).
_MIGRATION_LOCK = 0x73716C6D656E64
_MIGRATIONS_TABLE = """CREATE TABLE IF NOT EXISTS sqlmend_migrations (
    version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"""

_migrated: set[str] = set()
_migrated_lock = threading.Lock()


def migrations() -> list[tuple[int, str, str]]:
    """Return ``(version, name, sql)`` of every migration file, in version order."""
    out = []
    for entry in resources.files("sqlmend.memory").joinpath("migrations").iterdir():
        if entry.name.endswith(".sql"):
            version = int(entry.name.split("_", 1)[0])
            out.append((version, entry.name, entry.read_text(encoding="utf-8")))
    return sorted(out)


def _connect(url: str) -> Any:
    import psycopg

    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise DatabaseError(f"cannot open the memory store: {type(exc).__name__}") from None


def migrate(conn: Any) -> list[int]:
    """Bring the schema up to date: apply, in one transaction, every migration not yet applied.

    Replicas starting at once serialize on an advisory lock; the second finds
    nothing to do.

    Args:
        conn: an open psycopg connection (autocommit).

    Returns:
        The versions applied now (empty when the schema was current).
    """
    applied_now: list[int] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        conn.execute(_MIGRATIONS_TABLE)
        done = {v for (v,) in conn.execute("SELECT version FROM sqlmend_migrations")}
        for version, name, text in migrations():
            if version in done:
                continue
            conn.execute(text)
            conn.execute("INSERT INTO sqlmend_migrations (version, name) VALUES (%s, %s)", (version, name))
            applied_now.append(version)
    return applied_now


def schema_version(conn: Any) -> int:
    """The highest migration applied (0 for a database never migrated)."""
    row = conn.execute("SELECT to_regclass('sqlmend_migrations') IS NOT NULL").fetchone()
    if not row[0]:
        return 0
    return conn.execute("SELECT coalesce(max(version), 0) FROM sqlmend_migrations").fetchone()[0]


def ensure_schema(conn: Any, url: str) -> None:
    """Migrate once per process and URL (later stores skip the lock)."""
    with _migrated_lock:
        if url in _migrated:
            return
        migrate(conn)
        _migrated.add(url)


class PgMemoryStore(StoreBase):
    """The repair memory of one database, in PostgreSQL (same interface as the folder store).

    Args:
        url: ``postgresql://...`` of the memory database (its schema is migrated on first use).
        db_id: the database.
        create: False: the database must have items already (reading never creates one).
        namespace: one memory among several in the same PostgreSQL database.
        conn: an open connection to share (the store then does not close it).

    Raises:
        ConfigError: an invalid database id, or no items and ``create`` is False.
        DatabaseError: the server cannot be reached.
    """

    def __init__(self, url: str, db_id: str, create: bool = True, namespace: str = "default",
                 conn: Any = None):
        from sqlmend.db import check_db_id

        check_db_id(db_id)
        self.db_id, self.namespace = db_id, namespace
        self._own = conn is None
        self._con = conn if conn is not None else _connect(url)
        ensure_schema(self._con, url)
        if not create and not len(self):
            self.close()
            raise ConfigError(f"no repair memory for database {db_id!r} in the PostgreSQL store "
                              f"(namespace {namespace!r})")

    def close(self) -> None:
        if self._own:
            self._con.close()

    def add(self, item: MemoryItem) -> None:
        """Insert ``item`` (of this store's database), or update the row with its key: one row per repair."""
        body = item_body(item, self.db_id)
        self._con.execute(
            """INSERT INTO sqlmend_memory_items
                   (namespace, db_id, id, kind, error_type, question_id, keys, vector, body)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
               ON CONFLICT (namespace, db_id, id) DO UPDATE SET
                   kind = EXCLUDED.kind, error_type = EXCLUDED.error_type,
                   question_id = EXCLUDED.question_id, keys = EXCLUDED.keys,
                   vector = EXCLUDED.vector, body = EXCLUDED.body,
                   rev = nextval('sqlmend_memory_rev'), updated_at = now()""",
            (self.namespace, self.db_id, item.id, item.kind, item.error_type, item.support.question_id,
             json.dumps(item.keys), list(item.vector) if item.vector is not None else None,
             json.dumps(body, default=str)))

    def reject(self, question_id: str, stage: str, reason: str) -> None:
        """Log a historical correction that produced no item, and why (once per reason)."""
        self._con.execute(
            """INSERT INTO sqlmend_memory_rejections (namespace, db_id, question_id, stage, reason)
               VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING""",
            (self.namespace, self.db_id, question_id, stage, reason))

    def items(self) -> list[MemoryItem]:
        """Return this database's items in insertion order, vectors included."""
        out = []
        rows = self._con.execute(
            "SELECT body, vector FROM sqlmend_memory_items WHERE namespace = %s AND db_id = %s ORDER BY seq",
            (self.namespace, self.db_id))
        for body, vector in rows:
            d = dict(body)
            d["vector"] = [float(x) for x in vector] if vector else None
            out.append(MemoryItem.from_dict(d))
        return out

    def rejections(self) -> list[tuple[str, str, str]]:
        """Return ``(question_id, stage, reason)`` rows of the rejection log."""
        return [tuple(r) for r in self._con.execute(
            """SELECT question_id, stage, reason FROM sqlmend_memory_rejections
               WHERE namespace = %s AND db_id = %s ORDER BY seq""", (self.namespace, self.db_id))]

    def forget(self, question_id: str) -> None:
        """Remove this database's items and rejections of one historical correction, in one transaction."""
        with self._con.transaction():
            key = (self.namespace, self.db_id, question_id)
            self._con.execute("DELETE FROM sqlmend_memory_items WHERE namespace = %s AND db_id = %s "
                              "AND question_id = %s", key)
            self._con.execute("DELETE FROM sqlmend_memory_rejections WHERE namespace = %s AND db_id = %s "
                              "AND question_id = %s", key)
            self._bump()

    def clear(self) -> None:
        """Remove this database's items and rejections, in one transaction."""
        with self._con.transaction():
            key = (self.namespace, self.db_id)
            self._con.execute("DELETE FROM sqlmend_memory_items WHERE namespace = %s AND db_id = %s", key)
            self._con.execute("DELETE FROM sqlmend_memory_rejections WHERE namespace = %s AND db_id = %s",
                              key)
            self._bump()

    def _bump(self) -> None:
        """Record a removal, so that :meth:`revision` moves even when rows only went away."""
        self._con.execute(
            """INSERT INTO sqlmend_memory_clears VALUES (%s, %s, nextval('sqlmend_memory_rev'))
               ON CONFLICT (namespace, db_id) DO UPDATE SET rev = EXCLUDED.rev""", (self.namespace, self.db_id))

    def revision(self) -> tuple[int, int, int]:
        """A value that changes whenever this database's memory changes (add, update, clear)."""
        row = self._con.execute(
            """SELECT count(*), coalesce(max(rev), 0),
                      coalesce((SELECT rev FROM sqlmend_memory_clears WHERE namespace = %s AND db_id = %s), 0)
               FROM sqlmend_memory_items WHERE namespace = %s AND db_id = %s""",
            (self.namespace, self.db_id, self.namespace, self.db_id)).fetchone()
        return (int(row[0]), int(row[1]), int(row[2]))

    def __len__(self) -> int:
        return self._con.execute(
            "SELECT count(*) FROM sqlmend_memory_items WHERE namespace = %s AND db_id = %s",
            (self.namespace, self.db_id)).fetchone()[0]
