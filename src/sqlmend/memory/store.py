"""The per-database repair memory: one SQLite file per database (MIRA §3.2.3).

"The resulting memory items form a fixed, database-scoped repair memory before
online reuse." A store lives in a folder (default ``~/.cache/sqlmend/memory/
<namespace>``) as ``<db_id>.sqlite`` with one row per item plus a log of the
historical corrections that produced no item and why (§3.2.1).

Several replicas share one memory in PostgreSQL instead
(:mod:`sqlmend.memory.pgstore`); :func:`open_store` opens either, by location:
a folder, or a ``postgresql://`` URL.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

from sqlmend.db.pgmigrate import is_url
from sqlmend.errors import ConfigError
from sqlmend.memory.items import MemoryItem
from sqlmend.paths import cache_dir

_SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    id TEXT PRIMARY KEY, db_id TEXT NOT NULL, kind TEXT NOT NULL, error_type TEXT NOT NULL,
    question_id TEXT, keys TEXT NOT NULL, vector TEXT, body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS rejections (
    question_id TEXT NOT NULL, stage TEXT NOT NULL, reason TEXT NOT NULL,
    PRIMARY KEY (question_id, stage, reason)
);
"""


def store_root(namespace: str = "default", root: str | Path | None = None) -> Path:
    """Return the folder holding one namespace's per-database stores.

    Args:
        namespace: a name for one memory (e.g. the prediction file it was built from).
        root: an explicit folder; default ``<cache>/memory/<namespace>``.

    Returns:
        The folder (created).
    """
    if root is not None:
        path = Path(root).expanduser()
        path.mkdir(parents=True, exist_ok=True)
        return path
    return cache_dir("memory", namespace)


def item_body(item: MemoryItem, db_id: str) -> dict[str, Any]:
    """The stored body of an item (its vector is stored apart) for the store of ``db_id``.

    Raises:
        ConfigError: the item belongs to another database.
    """
    if item.db_id != db_id:
        raise ConfigError(f"item of {item.db_id} cannot go to the store of {db_id}")
    body = item.to_dict()
    body.pop("vector", None)
    return body


def shown(location: Any) -> str:
    """A store location fit to print: a URL without its password.

    >>> shown("postgresql://app:s3cret@db:5432/mem")
    'postgresql://app:***@db:5432/mem'
    """
    text = str(location)
    if is_url(text):
        return re.sub(r"(//[^:/@]+):[^@/]*@", r"\1:***@", text)
    return text


def open_store(location: str | Path, db_id: str, create: bool = True, namespace: str = "default") -> Any:
    """Open one database's memory in a folder or in PostgreSQL.

    Args:
        location: a folder of per-database stores, or a ``postgresql://`` URL.
        db_id: the database.
        create: False: the memory must exist already.
        namespace: the memory's namespace (PostgreSQL; a folder is one namespace already).

    Returns:
        A :class:`MemoryStore` or a :class:`~sqlmend.memory.pgstore.PgMemoryStore`
        (same methods: add, reject, items, rejections, clear, len; context manager).
    """
    if is_url(location):
        from sqlmend.memory.pgstore import PgMemoryStore

        return PgMemoryStore(str(location), db_id, create=create, namespace=namespace)
    return MemoryStore(location, db_id, create=create)


class StoreBase:
    """What every store shares: a context manager that closes it."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class MemoryStore(StoreBase):
    """The repair memory of one database.

    Args:
        folder: the folder of per-database stores (see :func:`store_root`).
        db_id: the database.
        create: False: the store must exist already (reading never creates one).

    Raises:
        ConfigError: an invalid database id, or no store and ``create`` is False.
    """

    def __init__(self, folder: str | Path, db_id: str, create: bool = True):
        if not db_id or "/" in db_id:
            raise ConfigError(f"invalid database id for a memory store: {db_id!r}")
        self.db_id = db_id
        self.path = Path(folder) / f"{db_id}.sqlite"
        if not create and not self.path.is_file():
            raise ConfigError(f"no repair memory for database {db_id!r} in {folder}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._con = sqlite3.connect(self.path)
        self._con.executescript(_SCHEMA)

    def close(self) -> None:
        self._con.close()

    def add(self, item: MemoryItem) -> None:
        """Insert or replace one item.

        Args:
            item: the item (its ``db_id`` must be this store's).
        """
        body = item_body(item, self.db_id)
        self._con.execute(
            "INSERT OR REPLACE INTO items VALUES (?,?,?,?,?,?,?,?)",
            (item.id, item.db_id, item.kind, item.error_type, item.support.question_id,
             json.dumps(item.keys), json.dumps(item.vector) if item.vector is not None else None,
             json.dumps(body)))
        self._con.commit()

    def reject(self, question_id: str, stage: str, reason: str) -> None:
        """Log a historical correction that produced no item, and why.

        Args:
            question_id: the historical question.
            stage: where it stopped (recovery, isolation, judge, admission).
            reason: the reason.
        """
        self._con.execute("INSERT OR IGNORE INTO rejections VALUES (?,?,?)", (question_id, stage, reason))
        self._con.commit()

    def items(self) -> list[MemoryItem]:
        """Return every item, in insertion order.

        Returns:
            The items, vectors included.
        """
        out = []
        for body, vector in self._con.execute("SELECT body, vector FROM items ORDER BY rowid"):
            d = json.loads(body)
            d["vector"] = json.loads(vector) if vector else None
            out.append(MemoryItem.from_dict(d))
        return out

    def rejections(self) -> list[tuple[str, str, str]]:
        """Return ``(question_id, stage, reason)`` rows of the rejection log."""
        return list(self._con.execute("SELECT question_id, stage, reason FROM rejections ORDER BY rowid"))

    def forget(self, question_id: str) -> None:
        """Remove the items and rejections of one historical correction (before it is rebuilt).

        Args:
            question_id: the correction's question id.
        """
        self._con.execute("DELETE FROM items WHERE question_id = ?", (question_id,))
        self._con.execute("DELETE FROM rejections WHERE question_id = ?", (question_id,))
        self._con.commit()

    def clear(self) -> None:
        """Remove every item and rejection (before a rebuild)."""
        self._con.execute("DELETE FROM items")
        self._con.execute("DELETE FROM rejections")
        self._con.commit()

    def __len__(self) -> int:
        return self._con.execute("SELECT COUNT(*) FROM items").fetchone()[0]
