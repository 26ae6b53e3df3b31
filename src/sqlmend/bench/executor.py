"""Run many read-only queries in worker processes, with a hard per-query time limit.

Each worker opens databases through :func:`sqlmend.db.connect` (kept open, a few
per worker) and runs its queries with the db layer's own time limit, the first
line of defence. The parent hands out small batches, receives each result as soon
as it is ready, and knows which query a worker is on; a worker that overruns
``timeout + grace`` (a query the engine cannot interrupt, a stuck fetch) is killed
and replaced, that query is answered "timeout", and the rest of its batch is
handed out again.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Callable, Sequence

from sqlmend.db import connect
from sqlmend.errors import DatabaseError, QueryTimeout, ReadOnlyViolation

#: Rows fetched at most per query: effectively all (the db layer takes an int cap).
ALL_ROWS = 2**31 - 2
#: Databases kept open per worker.
OPEN_DBS = 8


@dataclass
class Outcome:
    """What one query gave: ``status`` is "ok", "error" or "timeout"."""

    status: str
    columns: list[str] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)
    error: str = ""
    elapsed: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class Query:
    """One query to run: the database file (or URL) and the SQL."""

    db: str
    sql: str


def _open(target: str):
    # sqlmend.db (and sqlglot) are imported in the parent, so forked workers start warm
    return connect(target)


def run_query(dbs: "OrderedDict[str, object]", query: Query, timeout: float) -> Outcome:
    """Run one query on a cached connection (used inside the workers, and by tests).

    Args:
        dbs: open connections by target, least recently used first (updated in place).
        query: what to run.
        timeout: the db layer's time limit in seconds.

    Returns:
        The outcome; never raises for a query's own failure.
    """
    start = time.perf_counter()
    if not query.sql.strip():
        return Outcome("error", error="empty SQL")
    try:
        db = dbs.pop(query.db, None) or _open(query.db)
        dbs[query.db] = db
        while len(dbs) > OPEN_DBS:
            _, old = dbs.popitem(last=False)
            old.close()
        start = time.perf_counter()
        result = db.execute(query.sql, timeout=timeout, max_rows=ALL_ROWS)
        return Outcome("ok", columns=list(result.columns), rows=list(result.rows),
                       elapsed=time.perf_counter() - start)
    except QueryTimeout as e:
        return Outcome("timeout", error=str(e), elapsed=time.perf_counter() - start)
    except ReadOnlyViolation as e:
        return Outcome("error", error=f"refused: {e}", elapsed=time.perf_counter() - start)
    except DatabaseError as e:
        return Outcome("error", error=str(e), elapsed=time.perf_counter() - start)
    except Exception as e:  # a bad item must not stop the batch
        return Outcome("error", error=f"{type(e).__name__}: {e}", elapsed=time.perf_counter() - start)


def _worker_main(conn: Connection, timeout: float) -> None:
    dbs: OrderedDict[str, object] = OrderedDict()
    try:
        while True:
            try:
                batch = conn.recv()
            except EOFError:
                break
            if batch is None:
                break
            for key, query in batch:
                conn.send((key, run_query(dbs, query, timeout)))
    finally:
        for db in dbs.values():
            try:
                db.close()
            except Exception:
                pass


class _Worker:
    def __init__(self, ctx, timeout: float):
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_worker_main, args=(child, timeout), daemon=True)
        self.proc.start()
        child.close()
        self.inflight: deque[int] = deque()
        self.since = time.monotonic()  # when the query at inflight[0] started (at the latest)

    def send(self, batch: list[tuple[int, Query]]) -> None:
        if not self.inflight:
            self.since = time.monotonic()
        self.inflight.extend(k for k, _ in batch)
        self.conn.send(batch)

    def stop(self, kill: bool = False) -> None:
        if kill:
            self.proc.kill()
        else:
            try:
                self.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


class QueryPool:
    """Worker processes that run queries with a hard per-query time limit.

    Args:
        workers: number of worker processes (at least 1).
        timeout: per-query time limit in seconds, given to the db layer.
        grace: extra seconds after ``timeout`` before a worker is killed.
        batch: queries handed to a worker at a time.
    """

    def __init__(self, workers: int = 2, timeout: float = 30.0, grace: float = 2.0, batch: int = 8):
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers = workers
        self.timeout = timeout
        self.grace = grace
        self.batch = batch
        self.killed = 0  # workers killed for overrunning, over the pool's life
        self._ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()

    def run(self, queries: Sequence[Query],
            on_done: Callable[[int, Outcome], None] | None = None) -> list[Outcome]:
        """Run all queries; results come back in input order.

        Args:
            queries: the queries.
            on_done: called as ``on_done(index, outcome)`` when each finishes (progress bars).

        Returns:
            One :class:`Outcome` per query.
        """
        results: list[Outcome | None] = [None] * len(queries)
        if not queries:
            return []
        pending: deque[int] = deque(range(len(queries)))
        pool = [_Worker(self._ctx, self.timeout) for _ in range(min(self.workers, len(queries)))]
        limit = self.timeout + self.grace

        def finish(index: int, outcome: Outcome) -> None:
            results[index] = outcome
            if on_done is not None:
                on_done(index, outcome)

        def replace(i: int, outcome: Outcome) -> None:
            w = pool[i]
            first = w.inflight.popleft()
            finish(first, outcome)
            pending.extendleft(reversed(w.inflight))
            w.stop(kill=True)
            pool[i] = _Worker(self._ctx, self.timeout)

        try:
            remaining = len(queries)
            while remaining:
                for w in pool:
                    if len(w.inflight) <= self.batch // 2 and pending:
                        chunk = [pending.popleft() for _ in range(min(self.batch, len(pending)))]
                        w.send([(k, queries[k]) for k in chunk])
                busy = [w for w in pool if w.inflight]
                now = time.monotonic()
                wait_for = max(0.0, min(w.since + limit - now for w in busy))
                ready = wait([w.conn for w in busy], timeout=wait_for)
                for i, w in enumerate(pool):
                    if w.conn in ready:
                        try:
                            while w.conn.poll():
                                key, outcome = w.conn.recv()
                                w.inflight.remove(key)
                                w.since = time.monotonic()
                                finish(key, outcome)
                                remaining -= 1
                        except (EOFError, OSError):
                            code = w.proc.exitcode
                            replace(i, Outcome("error", error=f"worker process died (exit code {code})"))
                            remaining -= 1
                    elif w.inflight and time.monotonic() > w.since + limit:
                        self.killed += 1
                        replace(i, Outcome("timeout", error=f"killed after {limit:g}s (limit {self.timeout:g}s)",
                                           elapsed=time.monotonic() - w.since))
                        remaining -= 1
        finally:
            for w in pool:
                w.stop(kill=bool(w.inflight))
        return results  # type: ignore[return-value]
