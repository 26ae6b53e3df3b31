"""The call log and cache: one SQLite file recording every model call.

Each call is a row of ``calls`` (time, stage, endpoint, backend, model, kind, prompt hash,
tokens in/out, latency, cache hit, error, tag; for structured calls whether the answer was
schema-valid, the attempt -- 2 is the format retry -- and how decoding was constrained). Deterministic calls (temperature 0 or a
seed) are answered from ``cache`` when an identical call was made before, unless the
cache is off. The schema evolves through :data:`MIGRATIONS` (``PRAGMA user_version``).

Benchmarks tag their calls (``with tagged("q17"): ...``) and read :meth:`CallLog.summary`
to print calls and tokens per query.

Default file: ``sqlmend.paths.cache_dir() / "llm.sqlite"``; ``$SQLMEND_LLM_LOG`` moves it;
``$SQLMEND_LLM_CACHE=0`` turns the cache off (calls are still logged).

When the location is a ``postgresql://`` URL, ``CallLog(url)`` is a :class:`PgCallLog`: the
same tables (``sqlmend_llm_calls``, ``sqlmend_llm_cache``) and methods in one PostgreSQL
database, so service replicas share one cache. Its schema is the numbered files of
``migrations/``, applied once under an advisory lock (:mod:`sqlmend.db.pgmigrate`).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterator

from sqlmend.db import pgmigrate
from sqlmend.errors import DatabaseError
from sqlmend.paths import cache_dir

#: Schema migrations, applied in order; ``PRAGMA user_version`` = how many were applied.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE calls (
        id INTEGER PRIMARY KEY,
        ts REAL NOT NULL,
        stage TEXT NOT NULL,
        endpoint TEXT NOT NULL,
        backend TEXT NOT NULL,
        model TEXT NOT NULL,
        kind TEXT NOT NULL,
        prompt_hash TEXT NOT NULL,
        tokens_in INTEGER NOT NULL DEFAULT 0,
        tokens_out INTEGER NOT NULL DEFAULT 0,
        latency REAL NOT NULL DEFAULT 0,
        cache_hit INTEGER NOT NULL DEFAULT 0,
        error TEXT
    );
    CREATE TABLE cache (
        key TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        response TEXT NOT NULL,
        created REAL NOT NULL
    );
    CREATE INDEX calls_ts ON calls(ts);
    """,
    """
    ALTER TABLE calls ADD COLUMN tag TEXT;
    CREATE INDEX calls_tag ON calls(tag);
    """,
    # structured output: was the answer valid JSON of its schema (NULL: no schema asked),
    # which attempt of the call this was (2 = the format retry), how decoding was held to
    # the schema (llguidance, response_format, or NULL: by instruction only)
    """
    ALTER TABLE calls ADD COLUMN schema_valid INTEGER;
    ALTER TABLE calls ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE calls ADD COLUMN constrained TEXT;
    """,
]

_TAG: contextvars.ContextVar[str | None] = contextvars.ContextVar("sqlmend_llm_tag", default=None)


@contextlib.contextmanager
def tagged(tag: str) -> Iterator[None]:
    """Tag every call made inside the block (e.g. with a question id or a run id).

    Args:
        tag: the tag stored in ``calls.tag``.
    """
    token = _TAG.set(tag)
    try:
        yield
    finally:
        _TAG.reset(token)


def default_path() -> Path:
    """``$SQLMEND_LLM_LOG``, else ``cache_dir() / "llm.sqlite"``."""
    env = os.environ.get("SQLMEND_LLM_LOG")
    return Path(env).expanduser() if env else cache_dir() / "llm.sqlite"


def _location(path: str | os.PathLike | None) -> str:
    """The log's location: ``path``, else ``$SQLMEND_LLM_LOG`` kept as text when it is a URL."""
    if path is None and pgmigrate.is_url(os.environ.get("SQLMEND_LLM_LOG")):
        return os.environ["SQLMEND_LLM_LOG"]
    return str(path) if path is not None else str(default_path())


def cache_enabled_by_env() -> bool:
    """False when ``$SQLMEND_LLM_CACHE`` is ``0``/``false``/``off``/``no``."""
    return os.environ.get("SQLMEND_LLM_CACHE", "1").strip().lower() not in {"0", "false", "off", "no"}


class CallLog:
    """The SQLite call log and response cache (thread-safe, several processes may share it).

    Args:
        path: the SQLite file (``:memory:`` works), or a ``postgresql://`` URL (then the
            object is a :class:`PgCallLog`); None for ``$SQLMEND_LLM_LOG``, else the cache folder.
        cache: answer identical deterministic calls from the cache; None follows
            ``$SQLMEND_LLM_CACHE`` (on by default).
    """

    _CALLS, _CACHE = "calls", "cache"

    def __new__(cls, path: str | os.PathLike | None = None, cache: bool | None = None):
        if cls is CallLog and pgmigrate.is_url(_location(path)):
            cls = PgCallLog
        return super().__new__(cls)

    def __init__(self, path: str | os.PathLike | None = None, cache: bool | None = None):
        self.path = _location(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.cache = cache_enabled_by_env() if cache is None else cache
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0,
                                   isolation_level=None)
        if self.path != ":memory:":
            self._db.execute("PRAGMA journal_mode=WAL")
        self._migrate()

    def _migrate(self) -> None:
        with self._lock:
            done = self._db.execute("PRAGMA user_version").fetchone()[0]
            for version, script in enumerate(MIGRATIONS[done:], start=done + 1):
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    # another process may have migrated meanwhile
                    if self._db.execute("PRAGMA user_version").fetchone()[0] >= version:
                        self._db.execute("COMMIT")
                        continue
                    for stmt in filter(str.strip, script.split(";")):
                        self._db.execute(stmt)
                    self._db.execute(f"PRAGMA user_version = {version}")
                    self._db.execute("COMMIT")
                except sqlite3.Error:
                    self._db.execute("ROLLBACK")
                    raise

    @property
    def version(self) -> int:
        """How many migrations the file has."""
        with self._lock:
            return self._db.execute("PRAGMA user_version").fetchone()[0]

    def _run(self, sql: str, args: Any = ()) -> Any:
        """Execute one statement (``?`` placeholders; the caller holds the lock)."""
        return self._db.execute(sql, args)

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._db.close()

    # --- log ----------------------------------------------------------------
    def record(self, *, stage: str, endpoint: str, backend: str, model: str, kind: str,
               prompt_hash: str, usage: Any, latency: float, cache_hit: bool,
               error: str | None = None, schema_valid: bool | None = None, attempt: int = 1,
               constrained: str | None = None) -> None:
        """Append one call.

        Args:
            stage: the pipeline stage that made it.
            endpoint: the endpoint name.
            backend: backend kind.
            model: model name.
            kind: ``chat`` | ``embed`` | ``scores``.
            prompt_hash: the call key.
            usage: a :class:`~sqlmend.llm.base.Usage`.
            latency: seconds.
            cache_hit: answered from the cache.
            error: the error message of a failed call.
            schema_valid: for a structured call, whether the answer matched its schema
                (None: no schema was asked for).
            attempt: 1 for a first call, 2 for the format retry of a structured call.
            constrained: how decoding was held to the schema (``llguidance``,
                ``response_format``), None when only the instruction asked for it.
        """
        valid = None if schema_valid is None else int(bool(schema_valid))
        with self._lock:
            self._run(
                f"INSERT INTO {self._CALLS} (ts, stage, endpoint, backend, model, kind, prompt_hash, tokens_in,"
                " tokens_out, latency, cache_hit, error, tag, schema_valid, attempt, constrained)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (time.time(), stage, endpoint, backend, model, kind, prompt_hash, usage.tokens_in,
                 usage.tokens_out, latency, int(cache_hit), error, _TAG.get(), valid, int(attempt),
                 constrained))

    def calls(self, tag: str | None = None, since: float | None = None) -> list[dict[str, Any]]:
        """The logged calls, oldest first.

        Args:
            tag: only calls with this tag.
            since: only calls at or after this UNIX time.

        Returns:
            One dict per call (the columns of ``calls``).
        """
        where, args = self._where(tag, since)
        with self._lock:
            cur = self._run(f"SELECT * FROM {self._CALLS}{where} ORDER BY id", args)
            names = [c[0] for c in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]

    def summary(self, tag: str | None = None, since: float | None = None) -> list[dict[str, Any]]:
        """Calls, cache hits, errors, tokens, latency and structured-output validity per stage.

        Args:
            tag: only calls with this tag.
            since: only calls at or after this UNIX time.

        Returns:
            One dict per stage: ``stage, calls, cache_hits, errors, tokens_in, tokens_out,
            latency, structured`` (calls that asked for a schema), ``valid`` (of those, the
            schema-valid ones), ``retries`` (format retries).
        """
        where, args = self._where(tag, since)
        with self._lock:
            rows = self._run(
                "SELECT stage, COUNT(*), SUM(cache_hit), SUM(CASE WHEN error IS NULL THEN 0 ELSE 1 END),"
                " SUM(tokens_in), SUM(tokens_out), SUM(latency), COUNT(schema_valid),"
                " COALESCE(SUM(schema_valid), 0), SUM(CASE WHEN attempt > 1 THEN 1 ELSE 0 END)"
                f" FROM {self._CALLS}{where} GROUP BY stage ORDER BY stage", args).fetchall()
        keys = ("stage", "calls", "cache_hits", "errors", "tokens_in", "tokens_out", "latency",
                "structured", "valid", "retries")
        return [dict(zip(keys, r)) for r in rows]

    @staticmethod
    def _where(tag: str | None, since: float | None) -> tuple[str, list[Any]]:
        conds, args = [], []
        if tag is not None:
            conds.append("tag = ?")
            args.append(tag)
        if since is not None:
            conds.append("ts >= ?")
            args.append(since)
        return (" WHERE " + " AND ".join(conds)) if conds else "", args

    # --- cache ----------------------------------------------------------------
    def cache_get(self, key: str) -> dict[str, Any] | None:
        """The cached response of a call, or None (always None when the cache is off).

        Args:
            key: the call key.

        Returns:
            The stored JSON object or None.
        """
        if not self.cache:
            return None
        with self._lock:
            row = self._run(f"SELECT response FROM {self._CACHE} WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def cache_put(self, key: str, kind: str, response: dict[str, Any]) -> None:
        """Store a response (no-op when the cache is off).

        Args:
            key: the call key.
            kind: ``chat`` | ``embed`` | ``scores``.
            response: JSON-able response.
        """
        if not self.cache:
            return
        blob = json.dumps(response, ensure_ascii=False)
        with self._lock:
            self._run(f"INSERT INTO {self._CACHE} (key, kind, response, created) VALUES (?,?,?,?)"
                      " ON CONFLICT (key) DO UPDATE SET kind = excluded.kind,"
                      " response = excluded.response, created = excluded.created",
                      (key, kind, blob, time.time()))

    def clear_cache(self) -> int:
        """Delete every cached response.

        Returns:
            How many were deleted.
        """
        with self._lock:
            return self._run(f"DELETE FROM {self._CACHE}").rowcount


class PgCallLog(CallLog):
    """The call log and cache in PostgreSQL: one cache for every replica (same methods and columns).

    Made by ``CallLog("postgresql://...")``; the schema is migrated on first use (the files of
    ``sqlmend/llm/migrations/``, once, under an advisory lock). A cache entry's key is the
    call key, as in the SQLite file; writers of the same key make one row.

    Args:
        path: the ``postgresql://`` URL.
        cache: as for :class:`CallLog`.

    Raises:
        DatabaseError: the server cannot be reached.
    """

    _CALLS, _CACHE = "sqlmend_llm_calls", "sqlmend_llm_cache"
    _MIGRATIONS_TABLE = "sqlmend_llm_migrations"

    def __init__(self, path: str | os.PathLike | None = None, cache: bool | None = None):
        import psycopg

        self.path = _location(path)
        self.cache = cache_enabled_by_env() if cache is None else cache
        self._lock = threading.Lock()
        try:
            self._db = psycopg.connect(self.path, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise DatabaseError(f"cannot open the model call log: {type(exc).__name__}") from None
        pgmigrate.ensure_schema(self._db, self.path, "sqlmend.llm", self._MIGRATIONS_TABLE)

    @property
    def version(self) -> int:
        """The highest migration applied to the database."""
        with self._lock:
            return pgmigrate.schema_version(self._db, self._MIGRATIONS_TABLE)

    def _run(self, sql: str, args: Any = ()) -> Any:
        return self._db.execute(sql.replace("?", "%s"), args)
