"""DuckDB files, opened read-only with external access (files, extensions, network) off, in a worker process.

DuckDB allocates much outside its own ``memory_limit``: a string ``repeat()`` of 500 MB took this
process past 2 GB, a list ``range(100000000)`` past 6 GB (``sqlmend bench pathological``,
docs/scale.md). So the engine runs in a child process whose address space is capped
(:data:`WORKER_MEMORY`, ``RLIMIT_AS``): an allocation past it fails inside DuckDB, which stops the query
with its out-of-memory error, and the caller's process never holds more than one capped result
(:func:`~sqlmend.db.base.fetch_capped`). A worker that reached a memory limit is stopped (an allocator
keeps what it took), and one that died anyway too: the next query starts another.

In the worker a timer calls the connection's ``interrupt()`` when a query passes its time limit; the
connection stays usable. The caller waits at most ``timeout`` x
:data:`~sqlmend.db.base.SAFETY_FACTOR`: past that the worker is stopped and the item ends
(:class:`~sqlmend.errors.DeadlineExceeded`).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from sqlmend.db.base import (ENGINE_MEMORY, SAFETY_FACTOR, Database, fetch_capped, file_cache_key, limit_malloc_arenas,
                             split_qualified, sql_string)
from sqlmend.db.schema import assemble_listing, assemble_schema, relation_filter, schema_filter
from sqlmend.errors import (DatabaseError, DatabaseNotFoundError, DeadlineExceeded, MemoryLimitExceeded, QueryError,
                            QueryTimeout, ReadOnlyViolation)
from sqlmend.types import Schema, Table

#: The worker process's address-space cap (``RLIMIT_AS``): DuckDB's ``memory_limit`` (:data:`ENGINE_MEMORY`)
#: and what DuckDB, Python and the result hold beside it.
WORKER_MEMORY = 2 * ENGINE_MEMORY

#: DuckDB's threads in the worker (each adds a stack and a malloc arena to its address space).
WORKER_THREADS = 2

#: Seconds the worker may take to start and open the file.
START_SECONDS = 60.0

#: The columns of the tables and views of the database file (not of DuckDB's own catalogs), with comments.
_COLUMNS = """
SELECT c.table_schema, c.table_name, c.column_name, c.data_type, c.is_nullable, d.comment
FROM information_schema.columns c
JOIN information_schema.tables t
  ON t.table_catalog = c.table_catalog AND t.table_schema = c.table_schema AND t.table_name = c.table_name
LEFT JOIN duckdb_columns() d
  ON d.database_name = c.table_catalog AND d.schema_name = c.table_schema AND d.table_name = c.table_name
  AND d.column_name = c.column_name
WHERE c.table_catalog = current_database() AND t.table_type IN ('BASE TABLE', 'VIEW') AND {schemas}
ORDER BY c.table_schema, c.table_name, c.ordinal_position
"""

_RELATIONS = """
SELECT schema_name, table_name, 'table', comment FROM duckdb_tables() c
WHERE database_name = current_database() AND {schemas}
UNION ALL
SELECT schema_name, view_name, 'view', comment FROM duckdb_views() c
WHERE database_name = current_database() AND NOT internal AND {schemas}
"""

#: A foreign key of DuckDB references a table of its own schema.
_KEYS = """
SELECT CASE constraint_type WHEN 'PRIMARY KEY' THEN 'primary' ELSE 'foreign' END, schema_name, table_name,
       constraint_column_names, schema_name, referenced_table, referenced_column_names
FROM duckdb_constraints() c
WHERE database_name = current_database() AND {schemas} AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')
"""


def _schemas(column: str, schemas: list[str] | None) -> str:
    """The asked schemas, else every one but DuckDB's own catalogs."""
    return schema_filter(column, schemas, f"{column} NOT IN ('information_schema', 'pg_catalog')")


# --- the worker process ------------------------------------------------------


def _limit_memory(memory: int) -> None:
    """Cap the worker's address space; two malloc arenas, so that threads do not reserve it."""
    import resource

    limit_malloc_arenas()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = memory if hard == resource.RLIM_INFINITY else min(memory, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def _lock_configuration(conn: Any) -> None:
    """Lock the settings (no query may turn external access back on)."""
    import duckdb

    try:
        conn.execute("SET lock_configuration = true")
    except duckdb.InvalidInputException:
        if not conn.execute("SELECT current_setting('lock_configuration')").fetchone()[0]:
            raise


def _check_statement(conn: Any, sql: str) -> tuple[str, str] | None:
    """DuckDB's own parser: exactly one statement, of type SELECT (None), else the refusal."""
    import duckdb

    try:
        statements = conn.extract_statements(sql)
    except duckdb.Error as e:
        return "query", str(e)
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        kinds = ", ".join(st.type.name for st in statements) or "nothing"
        return "readonly", f"expected one SELECT statement, got {kinds}"
    return None


def _execute(conn: Any, sql: str, timeout: float, max_rows: int) -> tuple:
    """Run one query in the worker; the answer sent back to the caller."""
    import duckdb

    if (refusal := _check_statement(conn, sql)) is not None:
        return ("error", *refusal)
    fired = threading.Event()

    def interrupt() -> None:
        fired.set()
        conn.interrupt()

    timer = threading.Timer(timeout, interrupt)
    timer.daemon = True
    timer.start()
    try:
        cursor = conn.execute(sql)
        columns = [d[0] for d in cursor.description or ()]
        rows = fetch_capped(cursor.fetchmany, len(columns), max_rows) if cursor.description else []
    except MemoryLimitExceeded as e:
        return "error", "result", str(e)
    except MemoryError:
        return "error", "memory", "out of memory"
    except duckdb.Error as e:
        if fired.is_set() or isinstance(e, duckdb.InterruptException):
            return "error", "timeout", ""
        if isinstance(e, duckdb.OutOfMemoryException):
            return "error", "memory", str(e).split("\n")[0]
        message = str(e)
        low = message.lower()
        if isinstance(e, duckdb.PermissionException) or "read-only" in low or "read only" in low:
            return "error", "readonly", message
        return "error", "query", message
    finally:
        timer.cancel()
    return "ok", columns, rows[:max_rows], len(rows) > max_rows


def _serve(fd: int, path: str, memory: int) -> None:
    """The worker's loop: open the file, then answer ``(sql, timeout, max_rows)`` on the socket ``fd``
    until told to stop or the caller is gone."""
    pipe = Connection(fd)
    _limit_memory(memory)
    import duckdb

    try:
        conn = duckdb.connect(path, read_only=True,
                              config={"enable_external_access": False,
                                      "autoload_known_extensions": False,
                                      "autoinstall_known_extensions": False,
                                      "threads": WORKER_THREADS,
                                      "memory_limit": f"{ENGINE_MEMORY // 2**20}MB"})
        conn.execute("SET enable_progress_bar = false")
        _lock_configuration(conn)
    except (duckdb.Error, MemoryError) as e:
        pipe.send(("error", "open", str(e)))
        return
    pipe.send(("ready",))
    while True:
        try:
            request = pipe.recv()
        except EOFError:
            return
        if request is None:
            return
        try:
            answer = _execute(conn, *request)
        except MemoryError:
            answer = ("error", "memory", "out of memory")
        try:
            pipe.send(answer)
        except MemoryError:
            pipe.send(("error", "memory", "out of memory sending the result"))


# --- the caller's side --------------------------------------------------------

_peak = [0]  # the largest peak resident memory of a worker this process stopped, in bytes


def resident_peak(pid: int) -> int:
    """A process's peak resident memory (``VmHWM``) in bytes; 0 where /proc does not say."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def stopped_workers_peak() -> int:
    """The largest peak resident memory of the DuckDB workers this process has stopped, in bytes
    (``sqlmend bench pathological`` reports it beside the running workers')."""
    return _peak[0]



class DuckDBDatabase(Database):
    """A read-only DuckDB database file, read by a worker process with capped memory.

    Every schema of the file is read (``schemas``: only those), tables and views with their comments; a
    relation outside the search path (``main``) is named ``schema.name``.

    Args:
        path: the ``.duckdb`` file.
        schemas: the schemas to read (None: all).

    Raises:
        DatabaseNotFoundError: the file does not exist.
        DatabaseError: the file cannot be opened by DuckDB.
    """

    dialect = "duckdb"

    def __init__(self, path: str | Path, schemas: list[str] | None = None) -> None:
        self.path = Path(path).expanduser().resolve()
        super().__init__(str(self.path))
        self.schemas = schemas
        if not self.path.is_file():
            raise DatabaseNotFoundError(f"no DuckDB database at {self.path}")
        self._lock = threading.Lock()
        self._worker: Any = None
        self._pipe: Any = None
        self._conn: Any = True  # open until close() (Database.alive)
        self._start()

    def _start(self) -> None:
        # a new interpreter (not multiprocessing's spawn, which would import the caller's __main__ again)
        ours, theirs = socket.socketpair()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]), *sys.path])
        code = "import sys; from sqlmend.db.duckdb import _serve; _serve(int(sys.argv[1]), sys.argv[2], int(sys.argv[3]))"
        with theirs:
            worker = subprocess.Popen([sys.executable, "-c", code, str(theirs.fileno()), str(self.path),
                                       str(WORKER_MEMORY)], pass_fds=[theirs.fileno()], env=env,
                                      stdin=subprocess.DEVNULL)
        pipe = Connection(ours.detach())
        try:
            answer = pipe.recv() if pipe.poll(START_SECONDS) else None
        except (EOFError, OSError):
            answer = None
        if answer != ("ready",):
            worker.kill()
            worker.wait()
            pipe.close()
            why = answer[2] if answer else f"its worker did not start within {START_SECONDS:g}s (exit code {worker.returncode})"
            raise DatabaseError(f"cannot open {self.path} with DuckDB: {why}")
        self._worker, self._pipe = worker, pipe

    def _stop(self) -> None:
        worker, pipe = self._worker, self._pipe
        self._worker = self._pipe = None
        if worker is None:
            return
        _peak[0] = max(_peak[0], resident_peak(worker.pid))
        try:
            pipe.send(None)
        except (OSError, ValueError):
            pass
        try:
            worker.wait(2)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
        pipe.close()

    def close(self) -> None:
        """Stop the worker (safe to call twice)."""
        with self._lock:
            self._stop()
            self._conn = None

    def _ask(self, request: Any, wait: float) -> tuple:
        if self._conn is None:
            raise DatabaseError("connection is closed")
        if self._worker is None:
            began = time.perf_counter()
            self._start()
            self._overhead = time.perf_counter() - began  # not the query's time: not charged to the item
        try:
            self._pipe.send(request)
            if self._pipe.poll(wait):
                return self._pipe.recv()
        except (EOFError, OSError):
            try:
                code = self._worker.wait(1)
            except subprocess.TimeoutExpired:
                code = None
            self._stop()
            return "died", code
        self._stop()
        return ("late",)

    def peak_memory(self) -> int:
        """The running worker's peak resident memory (``VmHWM``), in bytes; 0 when none runs or /proc does not
        say. Read from /proc, not the worker's ``getrusage``: that one keeps the caller's peak from before the
        fork."""
        with self._lock:
            return resident_peak(self._worker.pid) if self._worker is not None else 0

    def _run(self, sql: str, timeout: float, max_rows: int) -> tuple[list[str], list[tuple], bool]:
        wait = timeout * SAFETY_FACTOR + 5.0
        with self._lock:
            answer = self._ask((sql, timeout, max_rows), wait)
        if answer[0] == "ok":
            return answer[1], answer[2], answer[3]
        if answer[0] == "late":
            self.aborted = DeadlineExceeded(f"timed out: DuckDB's worker did not answer within the safety net of "
                                            f"{wait:g}s (stopped; the next query starts another)")
            raise self.aborted
        if answer[0] == "died":
            raise MemoryLimitExceeded(f"DuckDB's worker process ended while running the query (exit code "
                                      f"{answer[1]}; its memory is capped at {WORKER_MEMORY / 2**20:g} MB); the "
                                      "next query starts another", timeout=timeout)
        kind, message = answer[1], answer[2]
        if kind in ("memory", "result"):
            # what the worker allocated up to its cap it may keep (fragments, allocator caches): a fresh one
            # serves the next query
            with self._lock:
                self._stop()
        if kind == "timeout":
            raise QueryTimeout(f"query interrupted after its time limit of {timeout:g}s", timeout=timeout)
        if kind == "result":
            raise MemoryLimitExceeded(message, timeout=timeout)
        if kind == "memory":
            raise MemoryLimitExceeded(f"query stopped at DuckDB's memory limit ({ENGINE_MEMORY / 2**20:g} MB for its "
                                      f"buffers, {WORKER_MEMORY / 2**20:g} MB for its process): {message}",
                                      timeout=timeout)
        if kind == "readonly":
            raise ReadOnlyViolation(f"DuckDB refused: {message}")
        raise QueryError(f"DuckDB: {message}", engine_message=message)

    def has_function(self, name: str) -> bool:
        """Whether DuckDB has a function or macro ``name`` (``schema.name``): ``duckdb_functions()``, asked
        only for a name the read-only list does not know."""
        schema, bare = split_qualified(name)
        where = f"lower(function_name) = lower({sql_string(bare)})"
        if schema:
            where += f" AND lower(schema_name) = lower({sql_string(schema)})"
        return bool(self._query(f"SELECT count(*) FROM duckdb_functions() WHERE {where}")[0][0])

    def _introspect(self) -> Schema:
        by_schema = _schemas("c.schema_name", self.schemas)
        return assemble_schema(self.dialect, self._query(_COLUMNS.format(schemas=_schemas("c.table_schema", self.schemas))),
                               self._query(_KEYS.format(schemas=by_schema)), self._path(),
                               self._query(_RELATIONS.format(schemas=by_schema)))

    def _path(self) -> list[str]:
        current, setting = self._query("SELECT current_schema(), current_setting('search_path')")[0]
        path = [p.strip().strip('"').rsplit(".", 1)[-1] for p in (setting or "").split(",") if p.strip()]
        return path or [current]

    def _list(self) -> Schema:
        """Every table and view by name, kind and comment, and the foreign keys between them (columns are read
        per relation, :meth:`_define`)."""
        by_schema = _schemas("c.schema_name", self.schemas)
        relations = sorted(self._query(_RELATIONS.format(schemas=by_schema)), key=lambda r: (r[0], r[1]))
        links = [(s, t, rs, rt) for kind, s, t, _, rs, rt, _ in self._query(_KEYS.format(schemas=by_schema))
                 if kind == "foreign"]
        return assemble_listing(self.dialect, relations, links, self._path())

    def _define(self, tables: list[Table]) -> list[Table]:
        """The columns, keys and comments of some relations of the listing, named by their keys there."""
        pairs = [(t.schema, t.relname) for t in tables]
        by_schema = _schemas("c.schema_name", self.schemas) + " AND " + relation_filter(
            pairs, "c.schema_name", "c.table_name")
        columns = _schemas("c.table_schema", self.schemas) + " AND " + relation_filter(
            pairs, "c.table_schema", "c.table_name")
        views = by_schema.replace("c.table_name", "c.view_name")
        listing = self.listing()
        schema = assemble_schema(self.dialect, self._query(_COLUMNS.format(schemas=columns)),
                                 self._query(_KEYS.format(schemas=by_schema)), listing.search_path,
                                 self._query(_RELATIONS.format(schemas=by_schema).replace(
                                     f"NOT internal AND {by_schema}", f"NOT internal AND {views}")),
                                 listing=listing)
        return schema.tables

    def cache_key(self) -> str | None:
        key = file_cache_key("duckdb", self.path)
        return key if not self.schemas else f"{key}:schemas={','.join(self.schemas)}"
