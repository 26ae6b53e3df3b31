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
from typing import Any

from sqlmend.db import check_db_id, pgmigrate
from sqlmend.errors import ConfigError, DatabaseError
from sqlmend.memory.items import MemoryItem
from sqlmend.memory.store import StoreBase, item_body

_PACKAGE, _TABLE = "sqlmend.memory", "sqlmend_migrations"


def migrations() -> list[tuple[int, str, str]]:
    """Return ``(version, name, sql)`` of every migration file, in version order."""
    return pgmigrate.migrations(_PACKAGE)


def _connect(url: str) -> Any:
    import psycopg

    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise DatabaseError(f"cannot open the memory store: {type(exc).__name__}") from None


def migrate(conn: Any) -> list[int]:
    """Bring the schema up to date (:func:`sqlmend.db.pgmigrate.migrate`): replicas starting at
    once serialize on an advisory lock; the second finds nothing to do.

    Args:
        conn: an open psycopg connection (autocommit).

    Returns:
        The versions applied now (empty when the schema was current).
    """
    return pgmigrate.migrate(conn, _PACKAGE, _TABLE)


def schema_version(conn: Any) -> int:
    """The highest migration applied (0 for a database never migrated)."""
    return pgmigrate.schema_version(conn, _TABLE)


def ensure_schema(conn: Any, url: str) -> None:
    """Migrate once per process and URL (later stores skip the lock)."""
    pgmigrate.ensure_schema(conn, url, _PACKAGE, _TABLE)


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


def save_adaptation(url: str, namespace: str, body: dict[str, Any]) -> None:
    """Store the search's adaptation of one namespace (:mod:`sqlmend.search.adaptation`), replacing the last.

    Args:
        url: ``postgresql://...`` of the memory database.
        namespace: the memory it belongs to.
        body: the adaptation's document (``Adaptation.to_dict()``, with its ``version``).
    """
    with _connect(url) as conn:
        ensure_schema(conn, url)
        conn.execute(
            """INSERT INTO sqlmend_memory_adaptations (namespace, version, body) VALUES (%s, %s, %s)
               ON CONFLICT (namespace) DO UPDATE SET version = EXCLUDED.version, body = EXCLUDED.body,
                   updated_at = now()""",
            (namespace, int(body.get("version", 0)), json.dumps(body)))


def load_adaptation(url: str, namespace: str) -> dict[str, Any] | None:
    """The adaptation document of one namespace, None when it has none."""
    with _connect(url) as conn:
        ensure_schema(conn, url)
        row = conn.execute("SELECT body FROM sqlmend_memory_adaptations WHERE namespace = %s",
                           (namespace,)).fetchone()
    return dict(row[0]) if row else None
