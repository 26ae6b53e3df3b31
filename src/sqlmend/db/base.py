"""The one interface every database engine of sqlmend implements.

A :class:`Database` is read-only by construction: :meth:`Database.execute`
refuses anything but a single read-only SELECT/WITH before the engine sees it
(:func:`sqlmend.sql.safety.check_read_only`), and each engine refuses writes a
second time in its own way. A query may call only the functions on its dialect's list of
functions that read and compute (:mod:`sqlmend.sql.functions`) and those of
:attr:`Database.allow_functions`; a name the list does not know is refused when the engine has
such a function (:meth:`Database.has_function`), else the engine reports it. Subclasses implement four small hooks; schema,
value index and profiles are built on them here, once for all engines.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlmend.errors import (DatabaseError, DatabaseNotFoundError, DeadlineExceeded, ItemAborted, ItemCancelled,
                            ItemLimitExceeded, MemoryLimitExceeded, QueryError, QueryTimeout, ReadOnlyViolation)
from sqlmend.db.results import sql_key
from sqlmend.sql.functions import refusal
from sqlmend.sql.safety import check_read_only, check_read_only_tree
from sqlmend.sql.size import join_width, text_join_width
from sqlmend.types import ColumnProfile, ExecResult, Schema, Table

if TYPE_CHECKING:
    from sqlmend.db.results import ItemResults
    from sqlmend.db.scope import CatalogueIndex
    from sqlmend.db.values import ValueIndex

#: Default time limit of a query, in seconds.
DEFAULT_TIMEOUT = 30.0
#: Default cap on returned rows.
DEFAULT_MAX_ROWS = 10_000
#: On an engine that counts its work (SQLite), a query's ``timeout`` is a work limit: this many
#: work units (thousands of VM instructions) per second of it. A setting, not a fit, set at the
#: slowest kind of SQLite work measured, so that ``timeout`` seconds of work end within about
#: ``timeout`` seconds on an idle machine whatever the query does: an unbounded recursive CTE ran
#: 27,000 units a second, a cartesian product 77,000, Spider's queries more (``sqlmend bench
#: pathological``, docs/scale.md). The limit stops a query at the same instruction on an idle
#: machine and a busy one.
WORK_PER_SECOND = 25_000
#: The wall-clock safety net of a work-limited query, as a multiple of its ``timeout``: past it the
#: query ends with :class:`~sqlmend.errors.DeadlineExceeded` (the item's "timed out" error), never
#: with an answer that depends on the load.
SAFETY_FACTOR = 10.0
#: One item's budget, as a multiple of its ``timeout``: every query of the item (the input, the static
#: rules' probes, the memory's probes, the search's candidates, the guard) draws on one budget of
#: ``ITEM_BUDGET`` x ``timeout`` (work on an engine that counts it, else seconds of query time), so
#: the item's queries together stop within it whatever the stages (:class:`WorkBudget`). Below 1, so
#: that the item, its stages' own work included, ends within its ``timeout`` (24 s of queries for
#: the default 30 s).
ITEM_BUDGET = 0.8
#: A result's size cap: rows fetched past this many bytes (text and blob lengths, 8 a number) stop
#: the query with :class:`~sqlmend.errors.MemoryLimitExceeded`, so no result can fill the process.
MAX_RESULT_BYTES = 64 * 2**20
#: The longest text or blob one value may hold: SQLite refuses a longer one (``SQLITE_LIMIT_LENGTH``);
#: the result fetch takes it as the size of a row's value on every engine.
MAX_VALUE_BYTES = 16 * 2**20
#: The most tables one SELECT may join: SQLite's own limit, which the other engines get from
#: :meth:`Database.execute` (their planners order hundreds of joins without checking their time limit).
MAX_JOIN_TABLES = 64
#: DuckDB's memory limit (``memory_limit``) and SQLite's heap limit (``hard_heap_limit``, for the
#: whole process): a query past it fails with :class:`~sqlmend.errors.MemoryLimitExceeded`.
ENGINE_MEMORY = 512 * 2**20
#: Tables counted by one query when the schema is read from an engine a query costs a round trip to.
COUNTS_A_QUERY = 100


#: Seconds a view's (or materialized view's) row count may take when the schema is read; past it, or
#: when the view fails (an unpopulated materialized view), its ``row_count`` is None.
VIEW_COUNT_TIMEOUT = 5.0


#: malloc arenas a long-running process keeps (glibc's default is 8 a core): each thread that held a
#: large result in its own arena kept that memory after it was freed, so a service's resident memory
#: rose in steps with its threads (``sqlmend bench soak``, docs/scale.md).
MALLOC_ARENAS = 2


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Cap glibc's malloc arenas for this process (``M_ARENA_MAX``); False where that is not glibc."""
    import ctypes

    try:
        return bool(ctypes.CDLL(None).mallopt(-8, arenas))  # M_ARENA_MAX
    except (OSError, AttributeError):
        return False


#: The item's wall-clock deadline: its budget's seconds and a grace, the larger of ``WALL_GRACE`` seconds
#: and ``WALL_SLACK`` of the budget; the safety net of :class:`WorkBudget`. Counted work decides (the
#: budget, the queries' work limits, the stages' own counted work); the clock ends an item whose
#: uncounted work (a scan's I/O, a loaded machine, a server's query time) would run it past its stated
#: time: 28.5 s for the default 24 s budget (19% past it), 6.1 s for a 1.6 s one.
WALL_GRACE, WALL_SLACK = 4.5, 0.15


class _SetAside:
    """Work set aside from wall-clock deadlines: how many are at it now, and the seconds of those finished
    (from when the first began to when the last ended). Several threads may set work aside at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.since = 0.0
        self.total = 0.0

    @contextmanager
    def aside(self) -> Iterator[None]:
        with self.lock:
            if not self.active:
                self.since = time.monotonic()
            self.active += 1
        try:
            yield
        finally:
            with self.lock:
                self.active -= 1
                if not self.active:
                    self.total += time.monotonic() - self.since


#: Work a process does once for every item (an embedded model loaded on first use), wherever it happens:
#: no item's deadline runs while it does, since every item waits on it alike (those that need it on its
#: lock, the others for the CPU).
_PROCESS_WORK = _SetAside()


def process_aside() -> Any:
    """A context for one-time work of the process (loading a model on first use): every running item's
    wall-clock deadline (:meth:`WorkBudget.check`) moves on by its duration. Its own bounds are its own."""
    return _PROCESS_WORK.aside()


class WorkBudget:
    """One item's budget for all its queries and checks: ``ITEM_BUDGET`` x ``timeout`` of work.

    Counted in the units of the engine's limit, the seconds of ``timeout``: on an engine that counts
    work (SQLite) a query's work units over :data:`WORK_PER_SECOND`, on the others its seconds; the
    stages' own work (per-literal value checks, the search's candidates) at the seconds their counts
    stand for (:meth:`spend`). Each query runs under the smaller of its own limit and what is left; a
    query stopped by what is left, one that starts with nothing left, or a stage's work past it ends
    the item (:class:`~sqlmend.errors.ItemLimitExceeded`).

    Two things end it besides, between units of work and inside a query: the wall clock past
    :attr:`deadline` (``seconds`` and a grace, :data:`WALL_GRACE`; the safety net,
    :class:`~sqlmend.errors.DeadlineExceeded`), and :meth:`cancel` (whoever asked stopped waiting:
    :class:`~sqlmend.errors.ItemCancelled`). Either ends the item with the input kept, never with
    another answer.

    >>> b = WorkBudget(30.0)
    >>> b.charge(12.5); b.left
    17.5
    """

    def __init__(self, seconds: float, cancel: threading.Event | None = None):
        self.seconds = seconds
        self.used = 0.0
        self.started = time.monotonic()
        self._deadline = self.started + seconds + max(WALL_GRACE, WALL_SLACK * seconds)
        self.cancelled = cancel if cancel is not None else threading.Event()
        #: The error that ended the item, kept so that the pipeline ends it even when a stage's own
        #: handler caught it.
        self.aborted: ItemAborted | None = None
        #: How much of the budget the stages' own work used, by kind (``spend(..., what=)``).
        self.stage_work: dict[str, float] = {}
        self._own = _SetAside()  # the item's work set aside (:meth:`aside`)
        self._process_work_at_start = _PROCESS_WORK.total  # the process's one-time work before this item

    @property
    def deadline(self) -> float:
        """The wall-clock safety net of the item (``time.monotonic()``), moved on by the work set aside:
        the item's own (:meth:`aside`) and the process's (:func:`process_aside`) since the item began."""
        return self._deadline + self._moved()

    @deadline.setter
    def deadline(self, when: float) -> None:
        self._deadline = when - self._moved()

    def _moved(self) -> float:
        return self._own.total + _PROCESS_WORK.total - self._process_work_at_start

    @property
    def setting_aside(self) -> bool:
        """Work is being set aside now, the item's or the process's: the deadline waits."""
        return bool(self._own.active or _PROCESS_WORK.active)

    @property
    def left(self) -> float:
        """Seconds of limit left to the item's queries."""
        return self.seconds - self.used

    def wall_left(self) -> float:
        """Seconds of wall clock left before the item's deadline."""
        return self.deadline - time.monotonic()

    def charge(self, seconds: float) -> None:
        """Count one query's work (in seconds of limit)."""
        self.used += seconds

    def cancel(self) -> None:
        """Stop the item at its next unit of work (thread-safe: the caller is another thread)."""
        self.cancelled.set()

    def aside(self) -> Any:
        """Work done once per database, not for this item (its schema read, its value index built or
        loaded, a big column read into it), as a context: its wall time moves the item's deadline on by as
        much (the deadline waits for all of a stage's threads that set work aside at once). It keeps bounds
        of its own (the index's reads are work-limited) and stops on :meth:`cancel`."""
        return self._own.aside()

    def _abort(self, error: ItemAborted) -> ItemAborted:
        self.aborted = error
        return error

    def check(self) -> None:
        """End the item if whoever asked stopped waiting or its wall-clock deadline passed.

        Raises:
            ItemCancelled: :meth:`cancel` was called.
            DeadlineExceeded: past :attr:`deadline`.
        """
        if self.cancelled.is_set():
            raise self._abort(ItemCancelled(CANCELLED))
        if time.monotonic() > self.deadline and not self.setting_aside:
            raise self._abort(DeadlineExceeded(self.past_deadline()))

    def spend(self, seconds: float, what: str) -> None:
        """Count a stage's own work (``seconds`` as its counts estimate it) and check the item's bounds.

        Args:
            seconds: the work's estimated seconds (its counted units at their cost).
            what: its kind (``"literal checks"``, ``"search"``...), named in the trace and the reason.

        Raises:
            ItemLimitExceeded: the budget is used up.
            ItemCancelled, DeadlineExceeded: see :meth:`check`.
        """
        self.used += seconds
        self.stage_work[what] = self.stage_work.get(what, 0.0) + seconds
        if self.used > self.seconds:
            raise self._abort(ItemLimitExceeded(self.spent(None, what)))
        self.check()

    def past_deadline(self) -> str:
        """The message of an item past its wall-clock deadline."""
        grace = max(WALL_GRACE, WALL_SLACK * self.seconds)
        return (f"timed out: the item ran past its wall-clock deadline (its budget of {self.seconds:g}s and "
                f"{grace:g}s more); the input is kept")

    def spent(self, counts_work: bool | None, what: str | None = None) -> str:
        """The message of an item whose queries (or stages' work, ``what``) used the budget up.

        ``counts_work`` None: say it in seconds, as the engine's own units are not known here.
        """
        unit = (f"{round(self.seconds * WORK_PER_SECOND):,} work units ({self.seconds:g}s of work)"
                if counts_work else f"{self.seconds:g}s of query time" if counts_work is False
                else f"{self.seconds:g}s of work")
        who = f"queries and {what}" if what else "queries"
        return f"the item's {who} used up its budget of {unit}, {ITEM_BUDGET:g} x the timeout; the input is kept"


#: The reason of an item whose caller stopped waiting (:meth:`WorkBudget.cancel`).
CANCELLED = ("cancelled: whoever asked for this correction stopped waiting (the request's deadline passed); "
             "its work stopped and the input is kept")


def aside(db: Any) -> Any:
    """:meth:`WorkBudget.aside` of ``db``'s running item (a no-op outside one)."""
    budget = getattr(db, "budget", None)
    return budget.aside() if budget is not None else nullcontext()


def row_bytes(row: tuple) -> int:
    """A row's size as the result cap counts it: text and blob lengths, 8 bytes any other value."""
    return sum(len(v) if isinstance(v, (str, bytes, bytearray, memoryview)) else 8 for v in row)


def fetch_capped(fetchmany: Any, columns: int, max_rows: int, max_bytes: int = MAX_RESULT_BYTES,
                 value_bytes: int | None = MAX_VALUE_BYTES) -> list[tuple]:
    """Fetch up to ``max_rows + 1`` rows, stopping past ``max_bytes`` (one shared fetch for every engine).

    Rows come in chunks small enough that a chunk of rows of the largest values (``value_bytes``
    each) stays within what is left of ``max_bytes``, so at most one chunk passes the cap before
    the check stops the fetch. An engine that bounds no value's size below a gigabyte and pays a
    round trip per chunk (PostgreSQL) gives ``value_bytes=None``: chunks are then sized by the
    widest row seen so far (its first chunk 16 rows), a bound that one chunk of far wider rows can pass.

    Args:
        fetchmany: the cursor's ``fetchmany(n)``.
        columns: the result's columns.
        max_rows: rows wanted (one more is fetched to tell a truncated result).
        max_bytes: the size cap (:func:`row_bytes`).
        value_bytes: the largest value the engine can return, or None (see above).

    Returns:
        The rows.

    Raises:
        MemoryLimitExceeded: the rows passed ``max_bytes``.
    """
    rows: list[tuple] = []
    size = 0
    widest = max(1, columns) * value_bytes if value_bytes else 0
    while len(rows) <= max_rows:
        fit = (max_bytes - size) // widest if widest else 16
        got = fetchmany(max(1, min(1024, max_rows + 1 - len(rows), fit)))
        if not got:
            break
        for row in got:
            n = row_bytes(row)
            size += n
            if value_bytes is None:
                widest = max(widest, n, 1024)
        rows.extend(got)
        if size > max_bytes:
            raise MemoryLimitExceeded(f"result stopped at its memory limit of {max_bytes / 2**20:g} MB "
                                      f"({len(rows):,} rows)")
    return rows


class _Loaded:
    """Schemas, listings, relations' definitions and value indexes already read in this process, by the
    database's cache key.

    A service opens one connection per request; without this each request would
    read the schema again and load the value index from its cache file again
    (30 ms for world_1). A key names the file's path, mtime and size, so a
    changed file is read afresh. Least recently used entries go past ``size``.
    """

    def __init__(self, size: int = 64):
        self.size = size
        self._items: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, kind: str, key: str | None) -> Any:
        if key is None:
            return None
        with self._lock:
            value = self._items.get((kind, key))
            if value is not None:
                self._items.move_to_end((kind, key))
            return value

    def put(self, kind: str, key: str | None, value: Any) -> None:
        if key is None:
            return
        with self._lock:
            self._items[(kind, key)] = value
            while len(self._items) > self.size:
                self._items.popitem(last=False)


LOADED = _Loaded()
#: A big catalogue's relations, one entry each (their definitions, counts and values: ``Database.scoped``).
RELATIONS = _Loaded(size=4096)


def forget() -> None:
    """Drop everything this process read of every database (as a new process starts: tests)."""
    for loaded in (LOADED, RELATIONS):
        with loaded._lock:
            loaded._items.clear()


def _disk_stamp(db: Database) -> str | None:
    """The value index's cache file with its mtime and size (None: no file yet, or no key).

    The file stays the source of truth: a rebuilt or damaged file changes the stamp.
    """
    from sqlmend.db.values import cache_file

    key = db.cache_key()
    if key is None:
        return None
    path = cache_file(key)
    try:
        st = path.stat()
    except OSError:
        return None
    return f"{path}:{st.st_mtime_ns}:{st.st_size}"


def mask_password(url: str) -> str:
    """A URL with its password replaced by ``***`` (what messages and reprs show).

    >>> mask_password("mysql://me:secret@h:3306/db"), mask_password("postgresql://me@h/db")
    ('mysql://me:***@h:3306/db', 'postgresql://me@h/db')
    """
    from urllib.parse import urlparse

    u = urlparse(url)
    if u.password is None:
        return url
    netloc = f"{u.username}:***@{u.hostname}" + (f":{u.port}" if u.port else "")
    return u._replace(netloc=netloc).geturl()


def sql_string(value: str) -> str:
    """A string literal of SQL (quotes doubled), for sqlmend's own catalogue queries.

    >>> sql_string("it's")
    "'it''s'"
    """
    return "'" + value.replace("'", "''") + "'"


def split_qualified(name: str) -> tuple[str | None, str]:
    """``("schema", "f")`` of a qualified call name ``schema.f``, ``(None, "f")`` of a bare one."""
    schema, dot, bare = name.rpartition(".")
    return (schema, bare) if dot else (None, name)


def quote_ident(name: str, dialect: str = "sqlite") -> str:
    """Quote an identifier for a database's dialect.

    >>> quote_ident('a"b'), quote_ident("order", "mysql")
    ('"a""b"', '`order`')

    Args:
        name: a table or column name as the engine stores it.
        dialect: the database's dialect: backticks for ``"mysql"`` (where double quotes write a
            string), double quotes for SQLite, PostgreSQL and DuckDB.

    Returns:
        The quoted name, inner quote characters doubled.
    """
    mark = "`" if dialect == "mysql" else '"'
    return mark + name.replace(mark, mark * 2) + mark


def file_cache_key(engine: str, path: Path) -> str:
    """Return a cache key for a database file: engine, path, mtime and size.

    Args:
        engine: the engine's name.
        path: the resolved file path.

    Returns:
        A string that changes whenever the file is modified.

    Raises:
        DatabaseNotFoundError: the file is gone (deleted or moved while open).
    """
    try:
        st = path.stat()
    except OSError as e:
        raise DatabaseNotFoundError(f"the database file {path} is gone ({e.strerror}): deleted or moved while "
                                    "open") from e
    return f"{engine}:{path}:{st.st_mtime_ns}:{st.st_size}"


@dataclass
class Scope:
    """The relations the running item sees (:meth:`Database.scoped`): their schema, and their value index
    once asked for."""

    schema: Schema
    values: Any = None


#: Relations :meth:`Database.definitions` reads the definitions of in one go (one set of catalogue queries).
DEFINED_AT_ONCE = 500

#: Bump when the layout of a catalogue's listing kept on disk changes.
CATALOGUE_VERSION = 3


def _listing_file(key: str) -> Path:
    from sqlmend.paths import cache_dir

    digest = hashlib.sha256(f"{CATALOGUE_VERSION}|{key}".encode()).hexdigest()[:32]
    return cache_dir("catalogue") / f"{digest}.json"


def _stored_listing(key: str | None) -> Schema | None:
    """A catalogue's listing kept on disk under ``key`` (None: none, or a damaged file, read again)."""
    if key is None:
        return None
    try:
        data = json.loads(_listing_file(key).read_text(encoding="utf-8"))
        if data.get("key") != key:
            return None
        return Schema.from_dict(data["schema"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _store_listing(key: str | None, schema: Schema) -> None:
    """Keep a catalogue's listing on disk under ``key`` (atomically; a disk that refuses keeps nothing)."""
    if key is None:
        return
    path = _listing_file(key)
    tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_text(json.dumps({"key": key, "schema": schema.to_dict()}, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)


class Database(ABC):
    """A read-only connection to one database.

    Use it as a context manager, or call :meth:`close`. Engines set
    :attr:`dialect` (sqlglot's name) and :attr:`target` (the path or URL).
    """

    dialect: str = ""
    #: The last :class:`~sqlmend.errors.ItemAborted` a query of this connection raised, kept so that
    #: the pipeline ends the item with it even when a stage's own handler caught it
    #: (``pipeline._run_stage``); the pipeline clears it when an item starts.
    aborted: Any = None
    #: The running item's :class:`WorkBudget` (None: each query has only its own limit); the pipeline
    #: sets it when an item starts and clears it when the item ends.
    budget: WorkBudget | None = None
    #: Whether the engine itself refuses a join of more than :data:`MAX_JOIN_TABLES` tables (SQLite).
    limits_joins: bool = False
    #: Seconds of the last query's call that were not the query's own (an engine's worker starting): not
    #: charged to the item's budget.
    _overhead: float = 0.0
    #: Whether each query costs a round trip (a server, a worker process): the schema's row counts and the
    #: value index's columns are then read many to a query (SQLite reads each on its own, as cheap).
    round_trips: bool = True
    #: The running item's executed queries (:class:`sqlmend.db.results.ItemResults`; None: each call
    #: runs): the pipeline sets it with :attr:`budget`, so each distinct query runs once per item.
    results: ItemResults | None = None
    #: Functions a query may call beside the dialect's list (lower case; the configuration's
    #: ``allow_functions``: a user's own pure functions). The pipeline sets it.
    allow_functions: frozenset[str] = frozenset()

    def __init__(self, target: str) -> None:
        self.target = target
        self._schema: Schema | None = None
        self._values: ValueIndex | None = None
        self._profiles: dict[tuple[str, str], ColumnProfile] = {}
        self._keys: tuple[str | None, str | None] | None = None  # (catalogue_key, cache_key) read with the schema
        self._listing: Schema | None = None  # the relations by name (:meth:`listing`)
        self._scope: Scope | None = None  # the running item's relations (:meth:`scoped`)

    # --- engine hooks ----------------------------------------------------

    @abstractmethod
    def _run(self, sql: str, timeout: float, max_rows: int) -> tuple[list[str], list[tuple], bool]:
        """Run one already-checked query; return columns, rows (at most max_rows) and truncated.

        Raises QueryTimeout, QueryError or ReadOnlyViolation (when the engine refuses a write).
        """

    @abstractmethod
    def _introspect(self) -> Schema:
        """Tables, columns, declared types, primary and foreign keys (row counts are added here)."""

    def _list(self) -> Schema:
        """The relations by name: keys, schemas, kinds, comments, and the foreign keys between them (their
        columns may be left out, and are in engines that read them per relation, :meth:`_define`). This
        default reads everything (:meth:`_introspect`)."""
        return self._introspect()

    def _define(self, tables: list[Table]) -> list[Table]:
        """The whole definitions (columns, types, keys, comments) of relations of :meth:`listing`, named by
        the same keys. This default reads everything (:meth:`_introspect`) and keeps those."""
        whole = self._introspect()
        return [t for t in (whole.table(x.name) for x in tables) if t is not None]

    @abstractmethod
    def cache_key(self) -> str | None:
        """A string that changes when the database content may have changed, or None (no disk cache)."""

    def keys(self) -> tuple[str | None, str | None]:
        """``(catalogue_key, cache_key)``: what names the catalogue's version (a DDL change, a schema
        dropped, a column renamed give a new one) and what names the content's (any write too). An engine
        whose writes do not show in its catalogue key (PostgreSQL) tells them apart, in one round trip; a
        file's stamp is both."""
        key = self.cache_key()
        return key, key

    def quote(self, name: str) -> str:
        """Quote a table or column name for this database (:func:`quote_ident` in its dialect)."""
        return quote_ident(name, self.dialect)

    def relation(self, table: str) -> str:
        """A relation of the schema as a query writes it: its key (``Table.name``) quoted, schema and name
        apart for a qualified one (``"sales"."Orders"``); a name the schema does not have, quoted whole."""
        from sqlmend.db.schema import relation_sql

        return relation_sql(self.schema().table(table) or table, self.quote)

    def close(self) -> None:
        """Close the connection (safe to call twice)."""
        conn = getattr(self, "_conn", None)
        if conn is not None:
            conn.close()
            self._conn = None

    def alive(self) -> bool:
        """Whether this connection can still run queries (a pool asks before reusing one)."""
        return getattr(self, "_conn", None) is not None

    # --- public interface --------------------------------------------------

    def execute(self, sql: str, timeout: float = DEFAULT_TIMEOUT,
                max_rows: int = DEFAULT_MAX_ROWS) -> ExecResult:
        """Run one read-only query (once per item: :attr:`results`).

        Args:
            sql: a single SELECT/WITH query in this database's dialect.
            timeout: seconds before the query is interrupted.
            max_rows: rows returned at most; ``truncated`` says whether more existed.

        Returns:
            The columns, rows, truncated flag and elapsed seconds.

        Raises:
            ReadOnlyViolation: the SQL is not a single read-only query (refused before
                the engine, or by the engine).
            QueryTimeout: the query ran past ``timeout``; the connection stays usable.
            QueryError: the engine rejected or failed the query.
        """
        def checks() -> int:
            self._refuse_known(check_read_only(sql, self.dialect, self.allow_functions))
            return 0 if self.limits_joins else text_join_width(sql, self.dialect)

        return self._execute(sql, timeout, max_rows, checks)

    def execute_parsed(self, tree: Any, sql: str, timeout: float = DEFAULT_TIMEOUT,
                       max_rows: int = DEFAULT_MAX_ROWS) -> ExecResult:
        """Run one read-only query whose tree the caller already holds (no second parse).

        The read-only check runs on ``tree`` (``sql.check_read_only_tree``); ``sql``
        must be that tree rendered in this database's dialect (many candidates
        of a repair search are checked and run this way).

        Args:
            tree: the parsed statement (``sqlmend.sql.parse``).
            sql: its text.
            timeout: seconds before the query is interrupted.
            max_rows: rows returned at most.

        Returns:
            The result, as :meth:`execute`.

        Raises:
            ReadOnlyViolation, QueryTimeout, QueryError: as :meth:`execute`.
        """
        def checks() -> int:
            self._refuse_known(check_read_only_tree(tree, self.dialect, self.allow_functions))
            return 0 if self.limits_joins else join_width(tree)

        return self._execute(sql, timeout, max_rows, checks)

    def _execute(self, sql: str, timeout: float, max_rows: int, checks: Any) -> ExecResult:
        """The one path of a query: the item's remembered outcome, else the checks and a timed run."""
        self._begin()
        results = self.results
        key = sql_key(sql) if results is not None else ""
        if results is not None:
            if self.budget is not None:
                self.budget.check()
            try:
                hit = results.lookup(key, timeout, max_rows, self)
            except DatabaseError as exc:
                self._reuse_work(getattr(exc, "reused_work", None))
                raise
            if hit is not None:
                result, work = hit
                self._reuse_work(work)
                return replace(result, elapsed=0.0)
        try:
            self._check_width(checks())
        except DatabaseError as exc:  # refused before the engine: the same text is refused again
            if results is not None:
                results.remember(key, timeout, max_rows, self.last_work(), 0.0, error=exc, engine=False)
            raise
        return self._timed(sql, timeout, max_rows, key)

    def _refuse_known(self, names: tuple[str, ...]) -> None:
        """Refuse a query that calls a function the list does not know and the engine has."""
        for name in names:
            if self.has_function(name):
                raise ReadOnlyViolation(refusal(name, self.dialect))

    def has_function(self, name: str) -> bool:
        """Whether the engine has a function called ``name`` (``schema.name`` when qualified), asked for a
        name the dialect's list does not know. True unless the engine shows that it has none (this
        default: an engine that cannot be asked refuses every name off the list)."""
        return True

    @staticmethod
    def _check_width(width: int) -> None:
        if width > MAX_JOIN_TABLES:
            message = f"at most {MAX_JOIN_TABLES} tables in a join (this one joins {width})"
            raise QueryError(message, engine_message=message)

    def _begin(self) -> None:
        """Reset what :meth:`last_work` counts: a query refused before the engine did no work."""

    def _reuse_work(self, work: int | None) -> None:
        """Make :meth:`last_work` report ``work``: a call answered from the item's results stands for
        the run it reuses (engines that count work override it)."""

    def _work_units(self, timeout: float) -> int | None:
        """The work units a query may run under ``timeout`` (None: this engine counts no work)."""
        return None

    def _limit_error(self, timeout: float) -> tuple[QueryTimeout, int | None]:
        """The error, and the work count, of a query stopped at its limit ``timeout`` (what the item's
        results answer for a query whose remembered run needed more)."""
        return QueryTimeout(f"query interrupted after its time limit of {timeout:g}s", timeout=timeout), None

    def _timed(self, sql: str, timeout: float, max_rows: int, key: str = "") -> ExecResult:
        if timeout <= 0:
            raise QueryError(f"timeout must be positive, got {timeout}")
        if max_rows < 0:
            raise QueryError(f"max_rows must be >= 0, got {max_rows}")
        budget, results = self.budget, self.results
        limit = timeout if budget is None else min(timeout, budget.left)
        if budget is not None:
            budget.check()
            if limit <= 0:
                self.aborted = budget._abort(ItemLimitExceeded(budget.spent(self.last_work() is not None)))
                raise self.aborted
        wall = self._wall_bound(limit)
        self._overhead = 0.0  # seconds of the call that were not the query's (DuckDB: its worker starting)
        start = time.perf_counter()
        try:
            columns, rows, truncated = self._run(sql, wall, max_rows)
        except QueryTimeout as exc:
            if budget is not None and not isinstance(exc, MemoryLimitExceeded):
                if wall < limit:  # the item's wall-clock deadline cut it
                    self.aborted = budget._abort(DeadlineExceeded(budget.past_deadline()))
                    raise self.aborted from exc
                if limit < timeout:
                    self.aborted = budget._abort(ItemLimitExceeded(budget.spent(self.last_work() is not None)))
                    raise self.aborted from exc
            if results is not None:
                results.remember(key, limit, max_rows, self.last_work(), time.perf_counter() - start, error=exc)
            raise
        except ItemAborted as exc:
            if budget is not None:
                budget.aborted = exc
            raise
        except DatabaseError as exc:
            if results is not None:
                results.remember(key, limit, max_rows, self.last_work(), time.perf_counter() - start, error=exc)
            raise
        finally:
            if budget is not None:
                work = self.last_work()
                budget.charge(time.perf_counter() - start - self._overhead if work is None else work / WORK_PER_SECOND)
        result = ExecResult(columns=columns, rows=rows, truncated=truncated,
                            elapsed=time.perf_counter() - start, work=self.last_work())
        if results is not None:
            results.remember(key, limit, max_rows, result.work, result.elapsed, result=result)
        return result

    def _wall_bound(self, limit: float) -> float:
        """The limit a query runs under: its own, cut to the item's wall-clock deadline on an engine
        whose limit is wall-clock time (one that counts work checks the deadline itself)."""
        budget = self.budget
        if budget is None or self._work_units(limit) is not None:
            return limit
        return max(0.001, min(limit, budget.wall_left()))

    def last_work(self) -> int | None:
        """The engine's count of the work the last query did, failed or not (None: this engine does not
        count it).

        Unlike seconds, it is the same on a busy machine as on an idle one, so a bound on it
        (the repair search's budget) gives the same answer whatever the load.
        """
        return None

    def _query(self, sql: str, timeout: float = DEFAULT_TIMEOUT,
              max_rows: int = 1_000_000) -> list[tuple]:
        """Run an internal read query (introspection, profiles, value index) and return its rows.

        The AST check is skipped (these queries are sqlmend's own, and some use
        engine catalogue syntax sqlglot does not model); the engine's own
        read-only protections still apply.

        Args:
            sql: the query.
            timeout: seconds before it is interrupted.
            max_rows: rows returned at most.

        Returns:
            The rows.
        """
        return self._run(sql, timeout, max_rows)[1]

    def schema(self) -> Schema:
        """Return the schema the running item sees: its scope's relations (:meth:`scoped`, a catalogue
        above :data:`~sqlmend.db.scope.SCOPE_ABOVE` relations), else the whole :meth:`catalogue`.
        Shared by the process's connections: treat it as read-only.

        Returns:
            A :class:`sqlmend.types.Schema` in this database's dialect.
        """
        scope = self._scope
        return scope.schema if scope is not None else self.catalogue()

    def catalogue(self) -> Schema:
        """Return the whole catalogue: every relation the login may read with its columns, declared types,
        keys, comments and row counts, read in a bounded number of queries and kept in this process by its
        version (:meth:`keys`). A catalogue above :data:`~sqlmend.db.scope.SCOPE_ABOVE` relations is read
        whole only when asked; an item reads its scope (:meth:`listing`, :meth:`scoped`).
        """
        if self._schema is None:
            keys = self._version()
            schema = LOADED.get("schema", keys[1])
            if schema is None:
                with aside(self):
                    schema = self._introspect()
                    schema.dialect = self.dialect
                    self._count_rows(schema.tables)
                LOADED.put("schema", keys[1], schema)
            self._schema = schema
        return self._schema

    def _version(self) -> tuple[str | None, str | None]:
        """The :meth:`keys` the catalogue read by this connection belongs to (read once, until :meth:`refresh`)."""
        if self._keys is None:
            self._keys = self.keys()
        return self._keys

    def catalogue_version(self) -> tuple[str | None, str | None]:
        """The :meth:`keys` of what this connection has read (read once, until :meth:`refresh` finds them
        changed): what a reader that keeps something per database version keys it by, without a round trip."""
        return self._version()

    def listing(self) -> Schema:
        """Return the catalogue's relations by name: their keys, schemas, kinds and comments, and the foreign
        keys between them, without their columns on an engine that reads those per relation (SQLite,
        PostgreSQL, DuckDB); kept in this process by the catalogue's version, and on disk for a big one."""
        if self._listing is None:
            if self._schema is not None:
                self._listing = self._schema
            else:
                key = self._version()[0]
                listing = LOADED.get("listing", key) or _stored_listing(key)
                if listing is None:
                    from sqlmend.db.scope import SCOPE_ABOVE

                    with aside(self):
                        listing = self._list()
                        listing.dialect = self.dialect
                    if len(listing.tables) > SCOPE_ABOVE:  # a small one is read again as fast
                        _store_listing(key, listing)
                LOADED.put("listing", key, listing)
                self._listing = listing
        return self._listing

    def large(self) -> bool:
        """Whether the catalogue is read by scope (more than :data:`~sqlmend.db.scope.SCOPE_ABOVE` relations)."""
        from sqlmend.db.scope import SCOPE_ABOVE

        return len((self._schema or self.listing()).tables) > SCOPE_ABOVE

    def refresh(self) -> bool:
        """Read the catalogue and values again at their next use if the database changed since they were
        read (its :meth:`keys`): a connection kept across items (a service's) sees a table added, a column
        renamed or a schema dropped at the next item. One stat of a file, one round trip to a server.

        Returns:
            Whether something was dropped to be read again.
        """
        if self._keys is None:
            return False
        if self.keys() == self._keys:
            return False
        self._schema = self._listing = self._values = self._keys = None
        self._profiles.clear()
        return True

    def catalogue_index(self) -> CatalogueIndex:
        """The catalogue's names and foreign-key links (:class:`sqlmend.db.scope.CatalogueIndex`), built once
        per catalogue version in this process."""
        from sqlmend.db.scope import CatalogueIndex

        listing = self.listing()
        key = self._version()[0]
        index = LOADED.get("names", key)
        if index is None or index.catalogue is not listing:
            index = CatalogueIndex(listing)
            LOADED.put("names", key, index)
        return index

    @contextmanager
    def scoped(self, relations: list[str]) -> Iterator[Scope]:
        """Let the running item see only ``relations`` (keys of the catalogue): :meth:`schema` is theirs,
        whole (columns, keys, comments) and with their row counts, and :meth:`value_index` holds their
        columns alone; each relation read once per database version in this process (its values kept on
        disk too: :meth:`ValueIndex.for_tables`). Used by the pipeline for a catalogue above
        :data:`~sqlmend.db.scope.SCOPE_ABOVE` relations (:meth:`sqlmend.db.scope.CatalogueIndex.relations`).
        """
        listing = self.listing()
        counted = self._counted(self.definitions(relations))
        schema = Schema(tables=counted, dialect=listing.dialect, search_path=list(listing.search_path))
        scope, saved = Scope(schema=schema), self._values
        self._scope, self._values = scope, None
        try:
            yield scope
        finally:
            self._scope, self._values = None, saved

    def definitions(self, relations: list[str]) -> list[Table]:
        """The whole definitions (columns, types, keys, comments; no row counts on a big catalogue) of
        ``relations`` (keys of :meth:`listing`, kept in its order), each read once per catalogue version in
        this process, :data:`DEFINED_AT_ONCE` to a read."""
        if self._schema is not None:
            return [t for t in (self._schema.table(k) for k in relations) if t is not None]
        listing, key = self.listing(), self._version()[0]
        named = [t for t in (listing.table(k) for k in relations) if t is not None]
        found = {t.name: RELATIONS.get("definition", f"{key}|{t.name}") if key else None for t in named}
        missing = [t for t in named if found[t.name] is None]
        for i in range(0, len(missing), DEFINED_AT_ONCE):
            with aside(self):
                for t in self._define(missing[i:i + DEFINED_AT_ONCE]):
                    found[t.name] = t
                    if key:
                        RELATIONS.put("definition", f"{key}|{t.name}", t)
        return [found[t.name] for t in named if found.get(t.name) is not None]

    def _counted(self, tables: list[Table]) -> list[Table]:
        """Copies of ``tables`` with their row counts, each counted once per database version in this process."""
        key = self._version()[1]
        out: list[Table | None] = [t if t.row_count is not None else RELATIONS.get("relation", f"{key}|{t.name}")
                                   if key else None for t in tables]  # (a whole catalogue's are counted)
        missing = [replace(t) for t, got in zip(tables, out) if got is None]
        if missing:
            with aside(self):
                self._count_rows(missing)
            made = iter(missing)
            out = [got if got is not None else next(made) for got in out]
            for t in missing:
                if key:
                    RELATIONS.put("relation", f"{key}|{t.name}", t)
        return [t for t in out if t is not None]

    def _count_rows(self, tables: list[Table]) -> None:
        """Set each table's ``row_count`` (in place): stored tables a hundred to a query where a query costs a
        round trip; a view by its query, None when it fails or is slow."""
        from sqlmend.db.schema import relation_sql

        step = COUNTS_A_QUERY if self.round_trips else 1
        stored = [t for t in tables if t.kind == "table"]
        for i in range(0, len(stored), step):
            chunk = stored[i:i + step]
            counts = self._query("SELECT " + ", ".join(f"(SELECT COUNT(*) FROM {relation_sql(t, self.quote)})"
                                                       for t in chunk))[0]
            for table, count in zip(chunk, counts):
                table.row_count = int(count)
        for table in tables:
            if table.kind == "table":
                continue
            try:  # a view runs its query: one that fails or is slow has no count
                count = self._query(f"SELECT COUNT(*) FROM {relation_sql(table, self.quote)}", timeout=VIEW_COUNT_TIMEOUT)
                table.row_count = int(count[0][0])
            except DatabaseError:
                table.row_count = None

    def value_index(self, rebuild: bool = False) -> ValueIndex:
        """Return the value index of this database: from memory (once loaded in this process),
        else from the disk cache, else built once. Within a scope (:meth:`scoped`), the index of its
        relations alone.

        Args:
            rebuild: ignore the disk cache and build again.

        Returns:
            A :class:`sqlmend.db.values.ValueIndex`.
        """
        from sqlmend.db.values import ValueIndex

        scope = self._scope
        if scope is not None:
            if scope.values is None or rebuild:
                with aside(self):
                    scope.values = ValueIndex.for_tables(self, scope.schema.tables, rebuild=rebuild)
                self._values = None
            if self._values is None:
                self._values = scope.values.bind(self)
            return self._values
        if self.large():  # outside an item: every relation, each read (and kept) as a scope reads it
            if self._values is None or rebuild:
                with aside(self):
                    index = ValueIndex.for_tables(self, self._counted(self.catalogue().tables), rebuild=rebuild)
                # (every relation: the whole catalogue read, as asked)
                self._values = index.bind(self)
            return self._values
        if self._values is None or rebuild:
            index = None if rebuild else LOADED.get("values", _disk_stamp(self))
            if index is None:
                with aside(self):
                    index = ValueIndex.for_database(self, rebuild=rebuild)
                LOADED.put("values", _disk_stamp(self), index)
            else:
                index.from_cache = True
            self._values = index.bind(self)  # big tables' columns are read through this connection
        return self._values

    def column_sample(self, table: str, column: str, rows: int, timeout: float = DEFAULT_TIMEOUT) -> list[Any]:
        """A sample of a big column's distinct non-null values, read without scanning the table: those of
        its first ``rows`` rows (an engine with statistics of its own overrides it).

        Raises:
            QueryError, QueryTimeout: the engine failed the read.
        """
        c = self.quote(column)
        return [r[0] for r in self._query(
            f"SELECT DISTINCT {c} FROM (SELECT {c} FROM {self.relation(table)} LIMIT {int(rows)}) AS s "
            f"WHERE {c} IS NOT NULL", timeout=timeout)]

    def profile(self, table: str, column: str, samples: int = 5) -> ColumnProfile:
        """Describe one column: rows, null fraction, distinct count, min/max, sample values.

        Args:
            table: table name (case-insensitive).
            column: column name (case-insensitive).
            samples: how many distinct non-null values to return as samples.

        Returns:
            A :class:`sqlmend.types.ColumnProfile` (cached per column).

        Raises:
            DatabaseError: the table or column does not exist.
        """
        from sqlmend.db.profile import profile_column

        t, c = self.resolve_column(table, column)
        key = (t, c)
        if key not in self._profiles:
            self._profiles[key] = profile_column(self, t, c, samples=samples)
        return self._profiles[key]

    def resolve_column(self, table: str, column: str) -> tuple[str, str]:
        """Return the stored spelling of ``table``/``column`` (names are case-insensitive).

        Args:
            table: table name in any case.
            column: column name in any case.

        Returns:
            ``(table, column)`` as the engine stores them.

        Raises:
            DatabaseError: no such table or column.
        """
        t = self.schema().table(table)
        if t is None:
            raise DatabaseError(f"no table {table!r} in {self.target}")
        c = t.column(column)
        if c is None:
            raise DatabaseError(f"no column {column!r} in table {t.name!r} of {self.target}")
        return t.name, c.name

    # --- context manager ----------------------------------------------------

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.target!r})"
