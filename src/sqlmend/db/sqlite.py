"""SQLite files, opened read-only (the engine of the Spider and BIRD benchmarks).

Three locks on writes, after the AST check of :meth:`Database.execute`:
the file is opened with a ``file:...?mode=ro`` URI, ``PRAGMA query_only`` is on,
and an authorizer allows only reads (no ATTACH, no PRAGMA but catalogue reads) and only the
functions on SQLite's read-only list (:mod:`sqlmend.sql.functions`; no ``load_extension``, no file
functions) and the connection's :attr:`~sqlmend.db.base.Database.allow_functions`. A progress handler counts the query's work
(``PROGRESS_STEPS`` VM instructions a tick) and interrupts it at its work limit
(``timeout`` x :data:`~sqlmend.db.base.WORK_PER_SECOND` ticks), the same on an idle machine and
a busy one (:class:`~sqlmend.errors.WorkLimitExceeded`); a wall-clock deadline
(``timeout`` x :data:`~sqlmend.db.base.SAFETY_FACTOR`) is only a safety net and ends the
item (:class:`~sqlmend.errors.DeadlineExceeded`). The connection stays usable. Memory is capped
three ways: a text or blob over :data:`~sqlmend.db.base.MAX_VALUE_BYTES` is refused
(``SQLITE_LIMIT_LENGTH``), SQLite's heap is capped for the process (``hard_heap_limit``), and a result's
rows by bytes (:func:`~sqlmend.db.base.fetch_capped`): each stops the query with
:class:`~sqlmend.errors.MemoryLimitExceeded`. A file locked by
a writer past the busy timeout, or rewritten or damaged under the reader, fails the item too
(:class:`~sqlmend.errors.DatabaseUnavailable`), never the query alone.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections import defaultdict
from pathlib import Path
from urllib.parse import quote

from sqlmend.db.base import (CANCELLED, ENGINE_MEMORY, MAX_VALUE_BYTES, SAFETY_FACTOR, WORK_PER_SECOND, Database,
                             fetch_capped, file_cache_key, quote_ident)
from sqlmend.errors import (DatabaseError, DatabaseNotFoundError, DatabaseUnavailable, DeadlineExceeded, ItemAborted,
                            ItemCancelled, MemoryLimitExceeded, QueryError, ReadOnlyViolation, WorkLimitExceeded)
from sqlmend.sql.functions import allowed
from sqlmend.types import Column, ForeignKey, Schema, Table

#: Pragmas the authorizer lets through (catalogue reads used by introspection).
READ_PRAGMAS = frozenset({"table_info", "table_xinfo", "foreign_key_list", "index_list",
                          "index_info", "index_xinfo"})

_ALLOWED_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ,
                              getattr(sqlite3, "SQLITE_RECURSIVE", 33)})

#: Primary result codes that blame the file, not the query (locked, I/O, damaged, not a database).
_FILE_FAULTS = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR,
                          sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})

#: Primary result codes of a query past a memory limit (a value over SQLITE_LIMIT_LENGTH, the heap limit).
_MEMORY_FAULTS = frozenset({sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_NOMEM})

#: Virtual-machine instructions between two checks of the work limit (one tick of ``last_work``).
PROGRESS_STEPS = 1000


def _decode(raw: bytes) -> str:
    """Text as str; bytes that are not UTF-8 (a few Spider rows) become U+FFFD instead of failing."""
    return raw.decode("utf-8", errors="replace")


#: Functions the authorizer allows: SQLite's read-only list and the operators SQLite runs as functions.
READ_FUNCTIONS = allowed("sqlite") | {"->", "->>"}


def _authorize_with(extra: frozenset[str], action: int, arg1: str | None, arg2: str | None) -> int:
    """SQLite authorizer: reads only, functions of the read-only list and ``extra`` (the module docstring).

    SQLite asks about a function only once it found one of that name, so a name it does not have
    still fails as "no such function".
    """
    if action in _ALLOWED_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION:
        name = (arg2 or "").lower()
        return sqlite3.SQLITE_OK if name in READ_FUNCTIONS or name in extra else sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in READ_PRAGMAS:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


#: A table a ``CREATE TABLE`` references (its listing's foreign-key links: :meth:`SqliteDatabase._list`).
_REFERENCES = re.compile(r'\bREFERENCES\s+("(?:[^"]|"")+"|`[^`]+`|\[[^\]]+\]|[\w$]+)', re.IGNORECASE)


def _unquote(name: str) -> str:
    """A name as ``CREATE TABLE`` wrote it, without its quotes."""
    if name[:1] in ('"', "`", "[") and len(name) > 1:
        return name[1:-1].replace('""', '"')
    return name


def _function_names(conn: sqlite3.Connection) -> frozenset[str] | None:
    """Every function this SQLite library has (``pragma function_list``), or None where it does not say."""
    try:
        return frozenset(str(r[0]).lower() for r in conn.execute("SELECT name FROM pragma_function_list"))
    except sqlite3.Error:
        return None


class SqliteDatabase(Database):
    """A read-only SQLite database file.

    Args:
        path: the ``.sqlite`` file.

    Raises:
        DatabaseNotFoundError: the file does not exist.
        DatabaseError: the file cannot be opened as a SQLite database.
    """

    dialect = "sqlite"
    limits_joins = True  # "at most 64 tables in a join"
    round_trips = False  # in process: each column and count read on its own

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser().resolve()
        super().__init__(str(self.path))
        if not self.path.is_file():
            raise DatabaseNotFoundError(f"no SQLite database at {self.path}")
        uri = f"file:{quote(str(self.path))}?mode=ro"
        try:
            # no statement cache: SQLite counts a statement's VM steps across its runs, so a reused
            # statement would put the progress handler's ticks (last_work) elsewhere each time
            self._conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False,
                                         timeout=5.0, cached_statements=0)
            self._conn.text_factory = _decode
            self._conn.execute("PRAGMA query_only = ON")
            self._conn.execute(f"PRAGMA hard_heap_limit = {ENGINE_MEMORY}")  # the process's, once is enough
            self._conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
            self._conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as e:
            raise DatabaseError(f"cannot open {self.path} as SQLite: {e}") from e
        self._functions = _function_names(self._conn)
        self._conn.set_authorizer(self._authorize)
        self._deadline: float | None = None  # the wall-clock safety net of the running query
        self._max_ticks: int | None = None  # its work limit
        self._timed_out = self._work_limited = False
        self._ticks = 0  # progress-handler calls (PROGRESS_STEPS VM instructions each) of the last query
        self._item = None  # the running item's budget (its wall-clock deadline and cancellation)
        self._conn.set_progress_handler(self._progress, PROGRESS_STEPS)

    def _authorize(self, action: int, arg1: str | None, arg2: str | None, db_name: str | None,
                   trigger: str | None) -> int:
        return _authorize_with(self.allow_functions, action, arg1, arg2)

    def has_function(self, name: str) -> bool:
        """Whether this SQLite has a function ``name`` (``pragma function_list``; no schema-qualified ones;
        True for every name when the library does not list its functions)."""
        return self._functions is None or name.lower() in self._functions

    def _progress(self) -> int:
        self._ticks += 1
        if self._max_ticks is not None and self._ticks > self._max_ticks:
            self._work_limited = True
            return 1  # non-zero interrupts the statement
        if self._deadline is not None and time.monotonic() > self._deadline:
            self._timed_out = True
            return 1
        if self._item is not None and self._item.cancelled.is_set():
            self._timed_out = True
            return 1
        return 0

    def _run(self, sql: str, timeout: float, max_rows: int) -> tuple[list[str], list[tuple], bool]:
        self._timed_out = self._work_limited = False
        self._max_ticks = self._work_units(timeout)
        self._item = self.budget  # the item's deadline and cancellation, checked between instructions too
        self._deadline = time.monotonic() + timeout * SAFETY_FACTOR
        if self._item is not None and not self._item.setting_aside:
            self._deadline = min(self._deadline, self._item.deadline)
        cursor = self._conn.cursor()
        try:
            cursor.execute(sql)
            columns = [d[0] for d in cursor.description or ()]
            rows = fetch_capped(cursor.fetchmany, len(columns), max_rows) if cursor.description else []
        except MemoryError as e:  # SQLITE_NOMEM: the heap limit
            raise MemoryLimitExceeded(f"query stopped at the memory limit of {ENGINE_MEMORY / 2**20:g} MB "
                                      "(SQLite's heap)", timeout=timeout) from e
        except (sqlite3.Error, sqlite3.Warning) as e:
            error = self._translate(e, timeout)
            if isinstance(error, ItemAborted):
                self.aborted = error
            raise error from e
        finally:
            self._deadline = self._max_ticks = self._item = None
            cursor.close()
        truncated = len(rows) > max_rows
        return columns, rows[:max_rows], truncated

    def _begin(self) -> None:
        self._ticks = 0

    def _reuse_work(self, work: int | None) -> None:
        self._ticks = work or 0

    def _work_units(self, timeout: float) -> int:
        return int(timeout * WORK_PER_SECOND)

    def _limit_error(self, timeout: float) -> tuple[WorkLimitExceeded, int]:
        units = self._work_units(timeout)
        return self._work_error(timeout, units), units + 1

    @staticmethod
    def _work_error(timeout: float, units: int) -> WorkLimitExceeded:
        return WorkLimitExceeded(f"query interrupted at its work limit of {timeout:g}s "
                                 f"({units:,} thousand SQLite VM instructions)", timeout=timeout, work=units)

    def last_work(self) -> int:
        """Thousands of SQLite virtual-machine instructions the last query ran (``PROGRESS_STEPS`` each)."""
        return self._ticks

    def _translate(self, error: Exception, timeout: float) -> Exception:
        message = str(error)
        if self._work_limited:
            return self._work_error(timeout, self._ticks - 1)
        item = self._item
        if self._timed_out and item is not None and item.cancelled.is_set():
            return ItemCancelled(CANCELLED)
        if self._timed_out and item is not None and time.monotonic() > item.deadline and not item.setting_aside:
            return DeadlineExceeded(item.past_deadline())
        if self._timed_out:
            return DeadlineExceeded(f"timed out: a query ran past the wall-clock safety net of "
                                    f"{timeout * SAFETY_FACTOR:g}s (its work limit: {timeout:g}s at "
                                    f"{WORK_PER_SECOND:,} thousand VM instructions a second)")
        code = (getattr(error, "sqlite_errorcode", 0) or 0) & 0xFF
        if code in _MEMORY_FAULTS:
            return MemoryLimitExceeded(f"query stopped at its memory limit: {message} (a text or blob over "
                                       f"{MAX_VALUE_BYTES / 2**20:g} MB, or SQLite's heap over "
                                       f"{ENGINE_MEMORY / 2**20:g} MB)", timeout=timeout)
        if code in _FILE_FAULTS:
            return DatabaseUnavailable(f"database file unavailable: {message} ({self.path.name}: locked by a "
                                       "writer, or changed or damaged under the reader)")
        low = message.lower()
        if "not authorized" in low or "readonly" in low or "read-only" in low or "prohibited" in low:
            return ReadOnlyViolation(f"SQLite refused: {message}")
        return QueryError(f"SQLite: {message}", engine_message=message)

    def _catalogue(self, sql: str) -> list[tuple]:
        """Rows of one of sqlmend's own catalogue reads (a pragma of a few rows), without the result fetch's
        caps: a schema of ten thousand tables is read in twenty thousand of them."""
        try:
            return self._conn.execute(sql).fetchall()
        except sqlite3.Error as e:
            raise self._translate(e, 0.0) from e

    def _relations(self) -> list[tuple]:
        """``(name, type, sql)`` of every table and view, in the file's order."""
        return self._query(
            "SELECT name, type, sql FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' "
            "ESCAPE '\\' ORDER BY rowid")

    def _introspect(self) -> Schema:
        tables = [Table(name=name, schema="main", kind=kind) for name, kind, _ in self._relations()]
        schema = Schema(tables=tables, dialect=self.dialect, search_path=["main"])
        return Schema(tables=self._define(tables, schema), dialect=self.dialect, search_path=["main"])

    def _list(self) -> Schema:
        """Every table and view by name, with the tables its ``CREATE TABLE`` says each references (one query
        of ``sqlite_master``; the columns are read per relation, :meth:`_define`)."""
        rows = self._relations()
        tables = [Table(name=name, schema="main", kind=kind) for name, kind, _ in rows]
        schema = Schema(tables=tables, dialect=self.dialect, search_path=["main"])
        for table, (_, kind, ddl) in zip(tables, rows):
            refs = [_unquote(m.group(1)) for m in _REFERENCES.finditer(ddl or "")] if kind == "table" else []
            targets = dict.fromkeys(t.name for t in (schema.table(r) for r in refs) if t is not None)
            table.foreign_keys = [ForeignKey(table=table.name, columns=[], ref_table=name, ref_columns=[])
                                  for name in targets]
        return schema

    def _define(self, tables: list[Table], schema: Schema | None = None) -> list[Table]:
        """Each relation's columns (``PRAGMA table_info``) and foreign keys (``PRAGMA foreign_key_list``)."""
        schema = schema or self.listing()
        out = []
        for t in tables:
            info = self._catalogue(f"PRAGMA table_info({quote_ident(t.name)})")
            columns = [Column(name=r[1], type=r[2] or "", primary_key=bool(r[5]), not_null=bool(r[3]))
                       for r in info]
            pk = [r[1] for r in sorted((r for r in info if r[5]), key=lambda r: r[5])]
            table = Table(name=t.name, columns=columns, primary_key=pk, schema="main", kind=t.kind)
            if table.kind == "table":
                table.foreign_keys = self._foreign_keys(table.name, schema, table if t.name else None)
            out.append(table)
        return out

    def _foreign_keys(self, table: str, schema: Schema, defined: Table | None = None) -> list[ForeignKey]:
        groups: dict[int, list[tuple]] = defaultdict(list)
        for row in self._catalogue(f"PRAGMA foreign_key_list({quote_ident(table)})"):
            groups[row[0]].append(row)
        keys = []
        for rows in groups.values():
            rows.sort(key=lambda r: r[1])
            target = schema.table(rows[0][2])
            ref_table = target.name if target else rows[0][2]
            ref_columns = [r[4] for r in rows]
            if any(c is None for c in ref_columns):  # REFERENCES t without columns: t's primary key
                if target is not None and target.name == table and defined is not None:
                    target = defined  # a table that references itself
                elif target is not None and not target.columns:  # a listing's table: its key read now
                    info = self._catalogue(f"PRAGMA table_info({quote_ident(target.name)})")
                    target = Table(name=target.name, primary_key=[r[1] for r in sorted(
                        (r for r in info if r[5]), key=lambda r: r[5])])
                ref_columns = list(target.primary_key) if target else []
            keys.append(ForeignKey(table=table, columns=[r[3] for r in rows], ref_table=ref_table,
                                   ref_columns=ref_columns))
        return keys

    def cache_key(self) -> str | None:
        return file_cache_key("sqlite", self.path)
