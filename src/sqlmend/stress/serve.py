"""A load test of ``sqlmend serve`` you can rerun: loopback only, bounded in requests and time.

* **One process** (``replicas=1``): one ``sqlmend serve`` process (not a
  thread of the client's process), and the client sends ``requests`` POST
  /correct, ``concurrency`` at once.
* **Replicas** (``replicas=N`` with a PostgreSQL ``memory_store``): N separate
  ``sqlmend serve`` processes on one PostgreSQL repair memory, requests spread
  round-robin, while ``memory_items`` items are added concurrently by four
  writers (each item twice, by two of them, like two reviewers confirming the
  same repair). At the end the store must hold exactly those items: none lost,
  none duplicated.

The tasks are the questions of a Spider-dev prediction file (its SQL as the
upstream system wrote it), cycled. The client is a small keep-alive HTTP/1.1
client on asyncio streams (one connection per concurrent worker), so that it
takes as little of the machine's CPU as possible from the servers it measures.
Counted as errors: any status other than 200 and the intended 503 (saturated),
and any answer whose ``error`` is set.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlmend.db.pgmigrate import is_url
from sqlmend.errors import ConfigError
from sqlmend.service.runner import free_port

#: Never more than this many requests, nor longer than this many seconds, whatever the options say.
MAX_REQUESTS, MAX_SECONDS = 20_000, 600


@dataclass
class LoadReport:
    """What one load test measured."""

    replicas: int
    concurrency: int
    stages: str
    requests: int = 0
    ok: int = 0
    saturated: int = 0  # intended 503s
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    seconds: float = 0.0
    req_per_s: float = 0.0
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    p99_ms: float = 0.0
    memory_items: int = 0  # items added during the run
    items_stored: int | None = None  # items in the store afterwards
    items_lost: int | None = None
    items_duplicated: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def markdown(self) -> str:
        head = ("| replicas | concurrency | stages | requests | ok | 503 | errors | req/s | p50 ms "
                "| p95 ms | p99 ms | items added | stored | lost | duplicated |\n" + "|---" * 15 + "|\n")
        opt = [("-" if v is None else v) for v in (self.items_stored, self.items_lost, self.items_duplicated)]
        return head + (f"| {self.replicas} | {self.concurrency} | {self.stages} | {self.requests} | {self.ok} "
                       f"| {self.saturated} | {self.errors} | {self.req_per_s:.1f} | {self.p50_ms:.1f} "
                       f"| {self.p95_ms:.1f} | {self.p99_ms:.1f} | {self.memory_items} | {opt[0]} | {opt[1]} "
                       f"| {opt[2]} |\n")


def load_bodies(pred: Path, data_root: str | None = None, limit: int = 1034) -> list[bytes]:
    """Request bodies from a Spider-dev prediction file: question, database, the predicted SQL
    (questions whose database is missing from the data are left out)."""
    from sqlmend.data.datasets import load_dataset
    from sqlmend.data.predictions import load_predictions

    ds = load_dataset("spider-dev", data_root=data_root)
    preds = load_predictions(pred, ds)
    out = []
    for task in ds.tasks[:limit]:
        sql = preds.get(task.question_id)
        if sql and ds.db_path(task.db_id) is not None:  # the shared data lacks a few databases
            out.append(json.dumps({"db_id": task.db_id, "question": task.question, "sql": sql,
                                   "question_id": task.question_id}).encode())
    if not out:
        raise ConfigError(f"no task with SQL in {pred}")
    return out


# --- the client -------------------------------------------------------------


async def _post(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, path: str,
                body: bytes, headers: str) -> tuple[int, bytes]:
    writer.write(f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(body)}\r\n{headers}\r\n".encode() + body)
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return status, await reader.readexactly(length)


async def _drive(urls: list[str], bodies: list[bytes], requests: int, concurrency: int, max_seconds: float,
                 token: str | None, done: list[int] | None = None) -> tuple[list[float], list[int], list[str], float]:
    counter = itertools.count()
    done = done if done is not None else [0]
    latencies: list[float] = []
    statuses: list[int] = []
    problems: list[str] = []
    headers = f"Authorization: Bearer {token}\r\n" if token else ""
    stop_at = time.monotonic() + max_seconds

    async def worker(k: int) -> None:
        host, port = urls[k % len(urls)].split("//", 1)[1].split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            while time.monotonic() < stop_at:
                i = next(counter)
                if i >= requests:
                    return
                start = time.perf_counter()
                try:
                    status, payload = await _post(reader, writer, host, "/correct", bodies[i % len(bodies)],
                                                  headers)
                except (OSError, asyncio.IncompleteReadError) as exc:
                    statuses.append(0)
                    problems.append(f"connection: {type(exc).__name__}")
                    writer.close()
                    reader, writer = await asyncio.open_connection(host, int(port))
                    continue
                latencies.append(time.perf_counter() - start)
                statuses.append(status)
                done[0] += 1
                if status == 200:
                    error = json.loads(payload).get("error")
                    if error:
                        problems.append(f"200 with error: {error}")
                elif status != 503:
                    problems.append(f"{status}: {payload[:200]!r}")
        finally:
            writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(worker(k) for k in range(concurrency)))
    return latencies, statuses, problems, time.perf_counter() - start


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


# --- the servers ------------------------------------------------------------


def _wait_healthy(url: str, proc: subprocess.Popen, seconds: float = 120.0) -> None:
    import httpx

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ConfigError(f"replica at {url} exited with {proc.returncode}")
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise ConfigError(f"replica at {url} did not start within {seconds:g} s")


def start_replicas(n: int, serve_args: list[str], env: dict[str, str] | None = None,
                   log_dir: Path | None = None) -> tuple[list[str], list[subprocess.Popen]]:
    """Start ``n`` ``sqlmend serve`` processes on free loopback ports; return their URLs and processes."""
    urls, procs = [], []
    try:
        for k in range(n):
            port = free_port()
            log = open(log_dir / f"replica-{k}.log", "wb") if log_dir else subprocess.DEVNULL
            proc = subprocess.Popen(
                [sys.executable, "-c", "from sqlmend.cli import main; main()", "serve", "--host", "127.0.0.1",
                 "--port", str(port), *serve_args],
                stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
            urls.append(f"http://127.0.0.1:{port}")
            procs.append(proc)
        for url, proc in zip(urls, procs):
            _wait_healthy(url, proc)
    except BaseException:
        stop_replicas(procs)
        raise
    return urls, procs


def stop_replicas(procs: list[subprocess.Popen]) -> None:
    """Stop the replica processes (terminate, then kill after 10 s)."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


# --- memory writers ---------------------------------------------------------


def bench_items(n: int, db_ids: list[str], run: str) -> list[Any]:
    """``n`` distinct mechanical memory items spread over ``db_ids`` (ids unique to this run)."""
    from sqlmend.memory.items import LocalCheck, MemoryItem, SemanticContract, SourceSupport, StructuralSignature

    out = []
    for i in range(n):
        db_id = db_ids[i % len(db_ids)]
        out.append(MemoryItem(
            db_id=db_id, kind="value_literal", error_type="value_error",
            contract=SemanticContract("a literal compared with a text column", "a value not stored",
                                      "the stored spelling", "replace the literal"),
            signature=StructuralSignature(edits=[{"kind": "replace", "clause": "where", "n": i}],
                                          clauses=["where"], schema_refs=[]),
            check=LocalCheck("the literal", "absent from the column", {"value": f"bench-{run}-{i}"}),
            support=SourceSupport(f"bench-{run}-{i}", "q", "wrong", "repair", "reverted"),
            keys=[f"bench:{run}"], vector=[float(i % 7), 1.0, 0.5]))
    return out


def write_items(url: str, items: list[Any], namespace: str, done: list[int], requests: int,
                writers: int = 4, max_seconds: float = MAX_SECONDS) -> None:
    """Add ``items`` from ``writers`` threads, each item by two of them, while the requests run.

    The k-th write of a writer waits until about k/len(plan) of the ``requests``
    are answered (``done[0]``), so the writes are spread over the whole load.
    """
    from sqlmend.memory.pgstore import PgMemoryStore

    plans = [items[k::writers] + items[(k + 1) % writers::writers] for k in range(writers)]
    stop_at = time.monotonic() + max_seconds

    def write(plan: list[Any]) -> None:
        stores: dict[str, Any] = {}
        try:
            for k, item in enumerate(plan):
                while done[0] < requests * k / len(plan) and time.monotonic() < stop_at:
                    time.sleep(0.002)
                if item.db_id not in stores:
                    stores[item.db_id] = PgMemoryStore(url, item.db_id, namespace=namespace)
                stores[item.db_id].add(item)
        finally:
            for s in stores.values():
                s.close()

    threads = [threading.Thread(target=write, args=(p,)) for p in plans]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def count_items(url: str, items: list[Any], namespace: str) -> tuple[int, int, int]:
    """``(stored, lost, duplicated)`` of ``items`` in the store after the run."""
    from sqlmend.memory.pgstore import PgMemoryStore

    stored: list[str] = []
    for db_id in sorted({i.db_id for i in items}):
        with PgMemoryStore(url, db_id, namespace=namespace) as store:
            stored += [i.id for i in store.items()]
    wanted = {i.id for i in items}
    return len(stored), len(wanted - set(stored)), len(stored) - len(set(stored))


# --- the test ---------------------------------------------------------------


def run_load(bodies: list[bytes], *, requests: int = 200, concurrency: int = 16, replicas: int = 1,
             stages: str = "static,guard", memory_store: str | None = None, memory_items: int = 0,
             max_seconds: float = 120.0, serve_args: list[str] | None = None, token: str | None = None,
             log_dir: Path | None = None, warmup: int = 20) -> LoadReport:
    """Start the replicas, load them, stop them; return what was measured.

    Args:
        bodies: request bodies (:func:`load_bodies`), cycled.
        requests: requests to send (at most :data:`MAX_REQUESTS`).
        concurrency: requests in flight at once.
        replicas: ``sqlmend serve`` processes.
        stages: the pipeline stages of the replicas.
        memory_store: a PostgreSQL URL the replicas share (required for ``memory_items``).
        memory_items: items added concurrently during the run (each by two writers).
        max_seconds: stop sending after this long (at most :data:`MAX_SECONDS`).
        serve_args: more ``sqlmend serve`` options (``--max-concurrency``, ``--workers``, ...).
        token: a bearer token for the replicas (and the client).
        log_dir: where the replicas' stderr (JSON request log) goes; None: discarded.
        warmup: requests sent to each replica before measuring (not counted).

    Returns:
        The :class:`LoadReport`.
    """
    requests = min(requests, MAX_REQUESTS)
    max_seconds = min(max_seconds, MAX_SECONDS)
    if memory_items and not is_url(memory_store):
        raise ConfigError("--memory-items needs --memory-store postgresql://... (the store the replicas share)")
    run = time.strftime("%Y%m%d%H%M%S")
    namespace = f"bench-{run}"
    args = ["--stages", stages, *(serve_args or [])]
    if memory_store:
        args += ["--memory-store", memory_store, "--memory-namespace", namespace]
    if log_dir is None:
        args.append("--no-log")
    else:
        log_dir.mkdir(parents=True, exist_ok=True)
    env = {"SQLMEND_TOKEN": token} if token else {}
    report = LoadReport(replicas=replicas, concurrency=concurrency, stages=stages, memory_items=memory_items)
    urls, procs = start_replicas(replicas, args, env, log_dir)
    try:
        asyncio.run(_drive(urls, bodies, warmup * replicas, replicas, max_seconds, token))
        items = bench_items(memory_items, sorted({json.loads(b)["db_id"] for b in bodies}), run)
        done = [0]
        writer = None
        if items:
            writer = threading.Thread(target=write_items, args=(memory_store, items, namespace, done,
                                                                 requests), kwargs={"max_seconds": max_seconds})
            writer.start()
        latencies, statuses, problems, seconds = asyncio.run(
            _drive(urls, bodies, requests, concurrency, max_seconds, token, done))
        if writer is not None:
            writer.join()
            report.items_stored, report.items_lost, report.items_duplicated = count_items(
                memory_store, items, namespace)
    finally:
        stop_replicas(procs)
    report.requests = len(statuses)
    report.ok = sum(s == 200 for s in statuses) - sum(p.startswith("200 with error") for p in problems)
    report.saturated = sum(s == 503 for s in statuses)
    report.errors = len(problems)
    report.error_samples = sorted(set(problems))[:5]
    report.seconds = round(seconds, 3)
    report.req_per_s = round(len(statuses) / seconds, 1) if seconds else 0.0
    ms = [x * 1000 for x in latencies]
    report.p50_ms, report.p95_ms, report.p99_ms = (round(_percentile(ms, q), 1) for q in (50, 95, 99))
    return report
