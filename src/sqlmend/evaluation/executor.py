"""Run many read-only queries in worker processes, with a hard per-query time limit.

Each worker opens databases through :func:`sqlmend.db.connect` (kept open, a few
per worker) and runs its queries with the db layer's own time limit, the first
line of defence. The parent hands out batches of queries grouped by database, and
each worker publishes the query it is on in shared memory and reports results a
batch at a time (one message per batch, not per query: on a loaded machine every
wake-up of the parent costs). A worker that overruns ``timeout + grace`` on one
query (a query the engine cannot interrupt, a stuck fetch) is killed and replaced,
that query is answered "timeout", and the rest of its batch (including finished
but unreported queries) is handed out again.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import time
from collections import Counter, OrderedDict, deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Callable, Sequence

from sqlmend.db import connect
from sqlmend.errors import DatabaseError, DeadlineExceeded, QueryTimeout, ReadOnlyViolation

#: Rows fetched at most per query: effectively all (the db layer takes an int cap).
ALL_ROWS = 2**31 - 2
#: Databases kept open per worker.
OPEN_DBS = 8
#: The shared-memory slot's key while a worker is between queries.
IDLE = -1.0


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
    except (QueryTimeout, DeadlineExceeded) as e:
        return Outcome("timeout", error=str(e), elapsed=time.perf_counter() - start)
    except ReadOnlyViolation as e:
        return Outcome("error", error=f"refused: {e}", elapsed=time.perf_counter() - start)
    except DatabaseError as e:
        return Outcome("error", error=str(e), elapsed=time.perf_counter() - start)
    except Exception as e:  # a bad item must not stop the batch
        return Outcome("error", error=f"{type(e).__name__}: {e}", elapsed=time.perf_counter() - start)


def _worker_main(conn: Connection, slot, timeout: float, flush_every: float) -> None:
    """Run batches until told to stop; report results a batch at a time.

    Before each query the worker writes its start time and key into ``slot`` (shared
    memory), so the parent knows what it is running without a message per query.
    Results go back when the batch is done, or sooner once ``flush_every`` seconds
    have passed since the last report (a progress bar keeps moving, and a kill loses
    little finished work).
    """
    # what the worker inherited from its parent is never garbage: keep the collector off it
    # (fewer pages copied on write, shorter collections among the rows the queries create);
    # the parent may have paused the collector while it forked
    gc.freeze()
    gc.enable()
    dbs: OrderedDict[str, object] = OrderedDict()
    try:
        while True:
            try:
                batch = conn.recv()
            except EOFError:
                break
            if batch is None:
                break
            done: list[tuple[int, Outcome]] = []
            last = time.monotonic()
            for key, query in batch:
                slot[1] = time.monotonic()  # start first, then the key: the parent reads key, then start
                slot[0] = key
                done.append((key, run_query(dbs, query, timeout)))
                slot[0] = IDLE
                if time.monotonic() - last >= flush_every:
                    conn.send(done)
                    done, last = [], time.monotonic()
            if done:
                conn.send(done)
    finally:
        for db in dbs.values():
            try:
                db.close()
            except Exception:
                pass


class _Worker:
    def __init__(self, ctx, timeout: float, flush_every: float):
        self.conn, child = ctx.Pipe(duplex=True)
        self.slot = ctx.RawArray("d", [IDLE, 0.0])  # key of the running query, its start (monotonic)
        self.proc = ctx.Process(target=_worker_main, args=(child, self.slot, timeout, flush_every),
                                daemon=True)
        self.proc.start()
        child.close()
        self.inflight: dict[int, None] = {}  # keys handed out and not yet answered, in order
        self.chunk_ends: deque[int] = deque()  # last key of each batch not yet fully answered

    def send(self, batch: list[tuple[int, Query]]) -> None:
        self.inflight.update((k, None) for k, _ in batch)
        self.chunk_ends.append(batch[-1][0])
        self.conn.send(batch)

    def answered(self, key: int) -> None:
        """Forget ``key``; a worker answers in order, so its batch ends with its last key."""
        self.inflight.pop(key, None)
        if self.chunk_ends and self.chunk_ends[0] == key:
            self.chunk_ends.popleft()

    def running(self) -> tuple[int | None, float]:
        """The key of the query running now (None between queries) and when it started."""
        key = self.slot[0]
        started = self.slot[1]
        return (int(key), started) if key != IDLE and int(key) in self.inflight else (None, started)

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


class _Queues:
    """Query indices waiting to run, one queue per worker.

    Each database gets a home worker (databases dealt out largest first to the least
    loaded worker), so that a database's queries, and the same SQL in several prediction
    files, meet the same worker: one connection per database, and the read-only verdict
    cache of :mod:`sqlmend.sql.safety` answers repeats. A worker whose queue is empty
    takes from the end of the longest other queue. Batches shrink near the end so that
    the workers finish together.
    """

    def __init__(self, queries: Sequence[Query], workers: int):
        first_seen: dict[str, int] = {}
        counts: Counter[str] = Counter()
        for q in queries:
            first_seen.setdefault(q.db, len(first_seen))
            counts[q.db] += 1
        load = [0] * workers
        home: dict[str, int] = {}
        for db in sorted(counts, key=lambda d: (-counts[d], d)):
            home[db] = min(range(workers), key=lambda j: load[j])
            load[home[db]] += counts[db]
        self.queues: list[deque[int]] = [deque() for _ in range(workers)]
        for k in sorted(range(len(queries)), key=lambda k: first_seen[queries[k].db]):
            self.queues[home[queries[k].db]].append(k)

    def __len__(self) -> int:
        return sum(len(q) for q in self.queues)

    def take(self, worker: int, batch: int) -> list[int]:
        """The next batch for ``worker`` (empty when nothing is left)."""
        size = min(batch, max(1, -(-len(self) // (2 * len(self.queues)))))
        own = self.queues[worker]
        if own:
            return [own.popleft() for _ in range(min(size, len(own)))]
        donor = max(self.queues, key=len)
        chunk = [donor.pop() for _ in range(min(size, len(donor)))]
        chunk.reverse()
        return chunk

    def give_back(self, worker: int, keys: list[int]) -> None:
        """Put ``keys`` back at the front of ``worker``'s queue, in order."""
        self.queues[worker].extendleft(reversed(keys))


class QueryPool:
    """Worker processes that run queries with a hard per-query time limit.

    Queries are grouped by database (a worker keeps its connections open) and handed
    out in batches, two per worker at a time; workers answer a batch at a time and
    publish the query they are on in shared memory, which the parent watches.

    Used as a context manager, the workers are started once and serve every
    :meth:`run` until the block ends (several prediction files, one start-up);
    otherwise each :meth:`run` starts and stops its own.

    Args:
        workers: number of worker processes (at least 1).
        timeout: per-query time limit in seconds, given to the db layer.
        grace: extra seconds after ``timeout`` before a worker is killed.
        batch: queries handed to a worker at a time (at most; fewer near the end, so that
            the workers finish together).
        flush_every: seconds after which a worker reports finished queries mid-batch.
    """

    def __init__(self, workers: int = 2, timeout: float = 30.0, grace: float = 2.0, batch: int = 32,
                 flush_every: float = 0.25):
        if workers < 1:
            raise ValueError("workers must be at least 1")
        if batch < 1:
            raise ValueError("batch must be at least 1")
        self.workers = workers
        self.timeout = timeout
        self.grace = grace
        self.batch = batch
        self.flush_every = flush_every
        self.killed = 0  # workers killed for overrunning, over the pool's life
        self._ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
        self._pool: list[_Worker] = []  # running workers while open

    def _spawn(self) -> _Worker:
        return _Worker(self._ctx, self.timeout, self.flush_every)

    def __enter__(self) -> "QueryPool":
        self.close()
        self._pool = [self._spawn() for _ in range(self.workers)]
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop the workers (those still busy are killed); safe to call twice."""
        pool, self._pool = self._pool, []
        for w in pool:
            w.stop(kill=bool(w.inflight))

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
        own = not self._pool  # not opened as a context: workers for this run only
        pool = self._pool if not own else [self._spawn() for _ in range(min(self.workers, len(queries)))]
        pending = _Queues(queries, len(pool))
        limit = self.timeout + self.grace
        remaining = len(queries)

        def finish(index: int, outcome: Outcome) -> None:
            nonlocal remaining
            if results[index] is None:
                remaining -= 1
            results[index] = outcome
            if on_done is not None:
                on_done(index, outcome)

        def receive(w: _Worker) -> None:
            """Take every report waiting on ``w``'s pipe (raises EOFError/OSError if it died)."""
            while w.conn.poll():
                for key, outcome in w.conn.recv():
                    w.answered(key)
                    finish(key, outcome)

        def replace(i: int, outcome: Outcome, key: int | None) -> None:
            w = pool[i]
            victim = key if key is not None else next(iter(w.inflight))
            del w.inflight[victim]
            finish(victim, outcome)
            pending.give_back(i, list(w.inflight))  # finished-but-unreported ones run again
            w.stop(kill=True)
            pool[i] = self._spawn()

        try:
            while remaining:
                for i, w in enumerate(pool):
                    while len(w.chunk_ends) < 2:  # two batches each: no idle round trip
                        chunk = pending.take(i, self.batch)
                        if not chunk:
                            break
                        w.send([(k, queries[k]) for k in chunk])
                busy = [w for w in pool if w.inflight]
                now = time.monotonic()
                deadlines = []
                for w in busy:
                    key, started = w.running()
                    deadlines.append(started + limit if key is not None else now + limit)
                ready = wait([w.conn for w in busy], timeout=max(0.0, min(deadlines) - now))
                for i, w in enumerate(pool):
                    if not w.inflight:
                        continue
                    try:
                        if w.conn in ready:
                            receive(w)
                    except (EOFError, OSError):
                        key, _ = w.running()
                        w.proc.join(timeout=1.0)  # for its exit code
                        replace(i, Outcome("error", error=f"worker process died (exit code {w.proc.exitcode})"),
                                key)
                        continue
                    key, started = w.running()
                    if key is not None and time.monotonic() > started + limit:
                        try:
                            receive(w)  # what it finished before the stuck query
                        except (EOFError, OSError):
                            pass
                        key, started = w.running()
                        if key is None or time.monotonic() <= started + limit:
                            continue
                        self.killed += 1
                        replace(i, Outcome("timeout", error=f"killed after {limit:g}s (limit {self.timeout:g}s)",
                                           elapsed=time.monotonic() - started), key)
        except BaseException:
            if not own:
                self.close()  # busy workers hold stale batches: start afresh next time
            raise
        finally:
            if own:
                for w in pool:
                    w.stop(kill=bool(w.inflight))
        return results  # type: ignore[return-value]
