"""``sqlmend bench soak``: the service under steady load for minutes, watched for leaks.

Two ``sqlmend serve`` replicas (the default stages) on one throw-away PostgreSQL repair memory
(:class:`~sqlmend.testing.pgserver.PgServer`, as in ``bench faults``) get a steady stream of requests
from loopback clients: the questions of a Spider-dev prediction file (good and wrong SQL, as the
upstream system wrote it), hostile requests (writes, several statements, file functions, a path
as a database id, a malformed or oversized body) and pathological queries (an unbounded recursive
CTE, a cartesian product, huge blobs, hundreds of joins and UNIONs:
:data:`sqlmend.stress.pathological.QUERIES`). Every request is
sent to 127.0.0.1 only; the load is bounded in rate, in time (:data:`MAX_MINUTES`) and so in count,
and stops by itself.

Each kind of request has its expected answers (:func:`classify`): a question a 200 without error;
a hostile request a 4xx or a 200 (a refusal is a finding); a pathological one a 200, with or without
the item's clear limit error (:class:`~sqlmend.errors.ItemLimitExceeded`). Anything else is an
error. Per interval (a minute by default): requests, errors by kind, the expected clear outcomes,
p50/p95 milliseconds, each replica's resident memory and open file descriptors (``/proc/<pid>/``),
and the PostgreSQL server's connections (``pg_stat_activity``). At the end: growth per hour of
RSS and file descriptors, a least-squares line over the intervals after the warm-up.
"""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from sqlmend.stress.pathological import QUERIES
from sqlmend.errors import ConfigError

#: A soak never runs longer than this, whatever the options say.
MAX_MINUTES = 240.0
#: The database of the hostile and pathological requests (a Spider-dev database).
SOAK_DB = "world_1"

def _hostile() -> list[tuple[str, bytes]]:
    """Hostile requests: (name, body); the answers expected are a 4xx or a 200 (a refusal is a finding)."""
    def body(sql: str, db_id: str = SOAK_DB) -> bytes:
        return json.dumps({"db_id": db_id, "question": "What?", "sql": sql}).encode()

    return [
        ("delete", body("DELETE FROM city")),
        ("two_statements", body("SELECT 1; DROP TABLE city")),
        ("attach", body("ATTACH DATABASE '/tmp/x.sqlite' AS x")),
        ("load_extension", body("SELECT load_extension('/tmp/x.so')")),
        ("path_db_id", body("SELECT 1", db_id="../../etc/passwd")),
        ("malformed", b"{not json"),
        ("oversized", body("SELECT '" + "x" * 70_000 + "'")),
    ]


@dataclass
class Request:
    kind: str  # good (a prediction), hostile, pathological
    name: str
    body: bytes


@dataclass
class Outcome:
    t: float
    kind: str
    name: str
    status: int
    ms: float
    error: str | None
    verdict: str  # ok | clear | error


@dataclass
class Interval:
    """One row of the soak's table."""

    minute: float  # end of the interval, minutes from the start
    requests: int
    errors: int
    errors_by_kind: dict[str, int]
    clear: int  # expected clear outcomes (4xx of hostile requests, limit errors of pathological ones)
    p50_ms: float
    p95_ms: float
    rss_mb: list[float]  # per replica
    fds: list[int]
    pg_connections: int


@dataclass
class SoakReport:
    minutes: float
    replicas: int
    rate: float
    timeout: float
    intervals: list[Interval] = field(default_factory=list)
    requests: int = 0
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    clear: dict[str, int] = field(default_factory=dict)
    rss_growth_mb_per_h: list[float] = field(default_factory=list)
    fd_growth_per_h: list[float] = field(default_factory=list)
    pg_growth_per_h: float = 0.0
    warmup: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def markdown(self) -> str:
        head = ("| minute | requests | errors | clear | p50 ms | p95 ms | RSS MB (per replica) | fds | PG conns |\n"
                "| ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: |\n")
        rows = "".join(
            f"| {r.minute:.1f} | {r.requests} | {r.errors} | {r.clear} | {r.p50_ms:.0f} | {r.p95_ms:.0f} "
            f"| {' / '.join(f'{m:.0f}' for m in r.rss_mb)} | {' / '.join(map(str, r.fds))} "
            f"| {r.pg_connections} |\n" for r in self.intervals)
        tail = (f"\n{self.requests} requests, {self.errors} errors; clear outcomes {dict(self.clear)}; "
                f"growth per hour after {self.warmup} warm-up interval(s): RSS "
                f"{' / '.join(f'{g:+.1f}' for g in self.rss_growth_mb_per_h)} MB, fds "
                f"{' / '.join(f'{g:+.1f}' for g in self.fd_growth_per_h)}, PG connections "
                f"{self.pg_growth_per_h:+.1f}\n")
        return head + rows + tail


def requests_mix(pred: Path, data_root: str | None = None, limit: int = 400) -> list[Request]:
    """The cycle of requests: predictions, with a hostile request every 10th and a pathological one
    every 25th."""
    from sqlmend.stress.serve import load_bodies

    good = [Request("good", json.loads(b)["question_id"], b) for b in load_bodies(pred, data_root, limit=limit)]
    hostile = [Request("hostile", n, b) for n, b in _hostile()]
    patho = [Request("pathological", n, json.dumps({"db_id": SOAK_DB, "question": "How many?", "sql": s}).encode())
             for n, s in QUERIES["sqlite"].items()]
    out: list[Request] = []
    for i, req in enumerate(good):
        out.append(req)
        if i % 10 == 9:
            out.append(hostile[(i // 10) % len(hostile)])
        if i % 25 == 24:
            out.append(patho[(i // 25) % len(patho)])
    return out


def classify(kind: str, status: int, error: str | None) -> str:
    """``ok``, ``clear`` (an expected clear refusal or limit) or ``error`` for one answer."""
    if kind == "good":
        return "ok" if status == 200 and not error else "error"
    if kind == "hostile":
        if status in (400, 413, 422):
            return "clear"
        return "ok" if status == 200 and not error else "error"
    if status == 200 and not error:
        return "ok"
    # the item's counted budget, or its wall-clock net where the machine is slower than the count assumes
    # (docs/pipeline.md, "One budget per item"): either is a clear end with the input kept
    clear = status == 200 and error and (error.startswith("ItemLimitExceeded")
                                         or error.startswith("DeadlineExceeded: timed out: the item ran past"))
    return "clear" if clear else "error"


def proc_stats(pid: int) -> tuple[float, int]:
    """A process's resident memory in MB and its open file descriptors (Linux ``/proc``)."""
    rss = 0.0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


def slope_per_hour(minutes: list[float], values: list[float]) -> float:
    """The least-squares slope of ``values`` over ``minutes``, per hour (0 with fewer than 2 points).

    >>> slope_per_hour([1, 2, 3], [10, 10.5, 11])
    30.0
    """
    if len(minutes) < 2 or len(set(minutes)) < 2:
        return 0.0
    mx, my = statistics.fmean(minutes), statistics.fmean(values)
    num = sum((x - mx) * (y - my) for x, y in zip(minutes, values))
    den = sum((x - mx) ** 2 for x in minutes)
    return round(num / den * 60, 2)


def _client(url: str, reqs: list[Request], start: int, step: int, pace: float, stop: threading.Event,
            log: list[Outcome]) -> None:
    import httpx

    i = start
    next_at = time.monotonic()
    with httpx.Client(timeout=120) as http:
        while not stop.is_set():
            req = reqs[i % len(reqs)]
            i += step
            t = time.monotonic()
            try:
                r = http.post(url + "/correct", content=req.body, headers={"content-type": "application/json"})
                status = r.status_code
                error = r.json().get("error") if status == 200 else None
            except (httpx.HTTPError, ValueError) as exc:
                status, error = 0, type(exc).__name__
            ms = (time.monotonic() - t) * 1000
            log.append(Outcome(t, req.kind, req.name, status, round(ms, 1), error, classify(req.kind, status, error)))
            next_at += pace
            stop.wait(max(0.0, next_at - time.monotonic()))


def _pg_connections(url: str) -> int:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
                           "AND pid <> pg_backend_pid()").fetchone()
    return int(row[0])


def _interval(minute: float, batch: list[Outcome], procs: list[Any], pg_url: str) -> Interval:
    ms = sorted(o.ms for o in batch)
    errors = Counter(f"{o.kind}:{o.status}:{(o.error or '').split(':', 1)[0]}" for o in batch if o.verdict == "error")
    stats = [proc_stats(p.pid) for p in procs]
    pct = (lambda q: ms[min(len(ms) - 1, int(q * len(ms)))] if ms else 0.0)
    return Interval(minute=round(minute, 2), requests=len(batch), errors=sum(errors.values()),
                    errors_by_kind=dict(errors), clear=sum(o.verdict == "clear" for o in batch),
                    p50_ms=pct(0.5), p95_ms=pct(0.95), rss_mb=[round(s[0], 1) for s in stats],
                    fds=[s[1] for s in stats], pg_connections=_pg_connections(pg_url))


def run_soak(pred: Path, work: Path, *, minutes: float = 30.0, interval: float = 60.0, rate: float = 2.0,
             clients: int = 4, replicas: int = 2, timeout: float = 5.0, warmup: int = 1,
             data_root: str | None = None, echo: Callable[[str], None] = lambda line: None) -> SoakReport:
    """Soak ``replicas`` ``sqlmend serve`` processes on one PostgreSQL memory store (see the module doc).

    Args:
        pred: a Spider-dev prediction file (the good and wrong requests).
        work: a folder for the replicas' logs.
        minutes: how long the load runs (at most :data:`MAX_MINUTES`).
        interval: seconds per row of the table.
        rate: requests per second, all clients together (each client paced, waiting for its answers).
        clients: client threads.
        replicas: ``sqlmend serve`` processes.
        timeout: the service's ``--timeout`` (seconds of work per SQL execution, and per item).
        warmup: intervals left out of the growth fit.
        data_root: the folder holding ``spider/``.
        echo: receives each interval's line as it ends.

    Returns:
        The :class:`SoakReport`.
    """
    from sqlmend.testing.pgserver import PgServer, find_bin
    from sqlmend.stress.serve import bench_items, start_replicas, stop_replicas
    from sqlmend.memory.pgstore import PgMemoryStore

    if find_bin() is None:
        raise ConfigError("bench soak needs the PostgreSQL server binaries (scripts/setup.sh installs them)")
    if not 0 < minutes <= MAX_MINUTES:
        raise ConfigError(f"--minutes must be in (0, {MAX_MINUTES:g}], got {minutes:g}")
    reqs = requests_mix(pred, data_root)
    report = SoakReport(minutes=minutes, replicas=replicas, rate=rate, timeout=timeout, warmup=warmup)
    work.mkdir(parents=True, exist_ok=True)
    with PgServer.start() as server:
        server.admin("CREATE DATABASE soak")
        url = server.url("soak", user="postgres")
        db_ids = sorted({json.loads(r.body)["db_id"] for r in reqs if r.kind == "good"})
        for item in bench_items(len(db_ids), db_ids, "soak"):  # every database has a memory
            with PgMemoryStore(url, item.db_id, namespace="soak") as store:
                store.add(item)
        urls, procs = start_replicas(replicas, ["--memory-store", url, "--memory-namespace", "soak", "--no-log",
                                                "--timeout", f"{timeout:g}"], log_dir=work)
        log: list[Outcome] = []
        stop = threading.Event()
        threads = [threading.Thread(target=_client, args=(urls[k % len(urls)], reqs, k, clients, clients / rate,
                                                          stop, log), daemon=True) for k in range(clients)]
        try:
            start = time.monotonic()
            for t in threads:
                t.start()
            end = start + minutes * 60
            seen = 0
            while time.monotonic() < end and not stop.is_set():
                stop.wait(min(interval, max(0.0, end - time.monotonic())))
                batch, seen = log[seen:], len(log)
                row = _interval((time.monotonic() - start) / 60, batch, procs, url)
                report.intervals.append(row)
                echo(f"{row.minute:6.1f} min  {row.requests:4d} req  {row.errors} err  {row.clear} clear  "
                     f"p50 {row.p50_ms:.0f} ms  p95 {row.p95_ms:.0f} ms  RSS {row.rss_mb} MB  fds {row.fds}  "
                     f"PG {row.pg_connections}")
                if any(p.poll() is not None for p in procs):
                    report.error_samples.append("a replica exited")
                    break
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=150)
            stop_replicas(procs)
    report.requests = len(log)
    bad = [o for o in log if o.verdict == "error"]
    report.errors = len(bad)
    report.error_samples += [f"{o.kind} {o.name}: {o.status} {(o.error or '')[:160]}" for o in bad[:10]]
    report.clear = dict(Counter(f"{o.kind}:{o.status}:{(o.error or '').split(':', 1)[0]}" for o in log
                                if o.verdict == "clear"))
    fit = report.intervals[warmup:] if len(report.intervals) > warmup + 1 else report.intervals
    xs = [r.minute for r in fit]
    report.rss_growth_mb_per_h = [slope_per_hour(xs, [r.rss_mb[k] for r in fit]) for k in range(replicas)]
    report.fd_growth_per_h = [slope_per_hour(xs, [r.fds[k] for r in fit]) for k in range(replicas)]
    report.pg_growth_per_h = slope_per_hour(xs, [r.pg_connections for r in fit])
    return report
