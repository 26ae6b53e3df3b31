"""``sqlmend bench faults``: each fault injected into real components, and what it cost.

Every row runs real parts on this machine (loopback only), injects one fault while they work,
and counts:

* **items**: the requests, tasks or memory writes the fault could touch;
* **lost**: items with no answer, answers that differ from the clean run without saying why,
  items ending with an unclear error, confirmed memory items missing or stored twice (the aim: 0);
* **clear**: items that ended with a clear error, or whose trace names the fault;
* **re-run**: whether the same command run again completes the items the fault stopped.

The faults:

* ``memory-store``: the PostgreSQL repair memory (a throw-away server) stopped and restarted
  under two ``sqlmend serve`` replicas answering requests while a writer adds items;
* ``sqlite-locked`` / ``sqlite-replaced`` / ``sqlite-deleted``: during a batch
  (:func:`sqlmend.batch.run_file` on a private copy of a few Spider databases), one database file
  locked by a writer process (``BEGIN EXCLUSIVE``), rewritten in place as ``cp`` does (truncated,
  half written, then completed), or deleted (and put back for the re-run);
* ``ray-worker``: a Ray worker process killed mid-batch under ``--engine ray`` (needs ``sqlmend[ray]``);
* ``model-hangs`` / ``model-garbage`` / ``model-slow``: the model endpoint of a batch (an
  OpenAI-protocol server on loopback, FastAPI) never answers, answers a body that is not a
  completion, or answers late but within the time-out;
* ``disk-full``: ``sqlmend correct`` (a real process) with its run folder on a full disk (a
  64 KiB tmpfs when this user may mount one, else a file-size limit: EFBIG), then resumed with room.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse

from sqlmend.errors import ConfigError
from sqlmend.types import Correction, Task

FAULTS = ("memory-store", "sqlite-locked", "sqlite-replaced", "sqlite-deleted", "ray-worker",
          "model-hangs", "model-garbage", "model-slow", "disk-full")

#: A writer process that holds an exclusive lock on a SQLite file until its standard input closes, for
#: some seconds at most.
_LOCKER = ("import select, sqlite3, sys\n"
           "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
           "c.execute('BEGIN EXCLUSIVE')\n"
           "print('locked', flush=True)\n"
           "select.select([sys.stdin], [], [], float(sys.argv[2]))\n"
           "c.execute('ROLLBACK')\n")


@dataclass
class FaultRow:
    """What one injected fault cost."""

    fault: str
    sees: str
    items: int | None = None
    lost: int | None = None
    clear: int | None = None
    rerun: str = "-"
    seconds: float = 0.0
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def markdown(rows: list[FaultRow]) -> str:
    """The faults table (docs/benchmarks.md, "Faults")."""
    out = ["| fault | what the user sees | items | lost | clear error | re-run completes them |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        cells = ["-" if v is None else str(v) for v in (r.items, r.lost, r.clear)]
        out.append(f"| {r.fault} | {r.sees.replace('|', '/')} | {' | '.join(cells)} | {r.rerun} |")
    return "\n".join(out) + "\n"


def _short(text: str | None, n: int = 150) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


# --- a small real batch -------------------------------------------------------


@dataclass
class Batch:
    """Tasks of the first few Spider-dev databases, their files copied to a private folder."""

    ds: Any
    preds: dict[str, str]
    tasks: list[Task]
    db_ids: list[str]
    fmt: str

    def db_file(self, db_id: str) -> Path:
        return Path(self.ds.db_root) / db_id / f"{db_id}.sqlite"


def make_batch(pred: Path, work: Path, dbs: int = 4, per_db: int = 10, data_root: str | None = None,
               copy: bool = True) -> Batch:
    """The first ``per_db`` tasks of each of the first ``dbs`` Spider-dev databases (dataset order).

    Args:
        pred: a Spider-dev prediction file.
        work: a folder for the copied databases.
        dbs: databases.
        per_db: tasks per database.
        data_root: the folder holding ``spider/``.
        copy: copy the database files under ``work`` (False: use the shared ones, read only).
    """
    from sqlmend.data.datasets import load_dataset
    from sqlmend.data.predictions import load_predictions, sniff_pred_format

    shared = load_dataset("spider-dev", data_root=data_root)
    db_ids: list[str] = []
    for t in shared.tasks:
        if t.db_id not in db_ids and shared.db_path(t.db_id) is not None:
            db_ids.append(t.db_id)
        if len(db_ids) == dbs:
            break
    root = None
    if copy:
        root = work / "databases"
        for db_id in db_ids:
            (root / db_id).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(shared.db_path(db_id), root / db_id / f"{db_id}.sqlite")
    ds = load_dataset("spider-dev", data_root=data_root, db_root=root) if root else shared
    preds = load_predictions(pred, ds)
    tasks = [t for db_id in db_ids for t in [t for t in ds.with_sql(preds) if t.db_id == db_id][:per_db]]
    return Batch(ds, preds, tasks, db_ids, sniff_pred_format(pred))


def _parses(line: bytes) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def _lines(path: Path) -> list[dict[str, Any]]:
    out = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def _count(done: dict[str, Correction], tasks: list[Task], expected: dict[str, str]) -> dict[str, Any]:
    """Missing items, answers that differ from ``expected`` without an error, clear and unclear errors."""
    from sqlmend.pipeline import transient

    missing = [t.question_id for t in tasks if t.question_id not in done]
    silent = [t.question_id for t in tasks if t.question_id in done and done[t.question_id].error is None
              and done[t.question_id].sql != expected[t.question_id]]
    errors = {t.question_id: done[t.question_id].error for t in tasks
              if t.question_id in done and done[t.question_id].error}
    clear = [q for q, e in errors.items() if transient(e)]
    unclear = [q for q in errors if q not in clear]
    return {"missing": missing, "silent": silent, "clear": clear, "unclear": unclear, "errors": errors}


class _Watch(threading.Thread):
    """Calls ``action`` once the checkpoint holds ``lines`` lines (polled every 10 ms)."""

    def __init__(self, path: Path, lines: int, action: Callable[[], None]):
        super().__init__(daemon=True)
        self.path, self.lines, self.action = path, lines, action
        self.stop = threading.Event()
        self.fired = False

    def run(self) -> None:
        while not self.stop.is_set():
            if self.path.exists() and self.path.read_bytes().count(b"\n") >= self.lines:
                self.fired = True
                self.action()
                return
            time.sleep(0.01)


def sqlite_fault(kind: str, pred: Path, work: Path, *, dbs: int = 4, per_db: int = 10, workers: int = 2,
                 hold: float = 8.0, stages: list[str] | None = None, data_root: str | None = None) -> FaultRow:
    """A database file of a running batch locked, rewritten in place, or deleted.

    The clean run of the same tasks is the reference; the fault hits the third database as the batch
    starts, before any of its tasks can run (a fault injected when the batch reached them raced the
    first ones), while the items of the other databases go on; the re-run (same folder, files
    restored) must give the clean run's SQL for every task.

    Args:
        kind: ``locked`` (a writer process holds ``BEGIN EXCLUSIVE``), ``replaced`` (the file truncated
            and half rewritten, then completed) or ``deleted`` (put back after the batch). A lock or a
            half-written file lasts until an item of the database failed, ``hold`` s after the batch
            reached the database's first task, or the batch's end.
        pred: a Spider-dev prediction file.
        work: a fresh folder.
        dbs: databases in the batch.
        per_db: tasks per database.
        workers: tasks corrected at once.
        hold: seconds the lock or the half-written file lasts at most once the batch reached the database.
        stages: the pipeline's stages (default: sqlmend's).
        data_root: the folder holding ``spider/``.
    """
    from sqlmend.batch import run_file
    from sqlmend.pipeline import PipelineConfig, read_checkpoint

    if kind not in ("locked", "replaced", "deleted"):
        raise ConfigError(f"unknown SQLite fault {kind!r}: locked, replaced or deleted")
    t0 = time.perf_counter()
    b = make_batch(pred, work, dbs, per_db, data_root)
    config = PipelineConfig(stages=stages, workers=workers)
    clean, _ = run_file(b.ds, b.preds, b.tasks, config, work / "clean", b.fmt, progress=False)
    expected = {c.question_id: c.sql for c in clean}
    target = b.db_ids[min(2, len(b.db_ids) - 1)]
    path = b.db_file(target)
    original = path.read_bytes()
    first = next(i for i, t in enumerate(b.tasks) if t.db_id == target)
    out = work / "faulted"
    ckpt = out / "corrections.jsonl"
    reached = threading.Event()  # the batch reached the database's first task
    release = threading.Event()  # the batch ended

    def target_failed() -> bool:
        return any(d.get("db_id") == target and d.get("error") for d in _lines(ckpt))

    # the fault, in place before the batch starts
    locker = half = None
    if kind == "locked":
        # held until undo() closes its input; its own cap only ends a writer this process left behind
        locker = subprocess.Popen([sys.executable, "-c", _LOCKER, str(path), str(hold + 600)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        locker.stdout.readline()  # "locked"
    elif kind == "replaced":
        half = open(path, "wb")  # as `cp new old` does: truncate, write, ...
        half.write(original[: len(original) // 2])
        half.flush()
    else:
        path.unlink()

    def undo() -> None:
        """Lift the lock or finish the file once an item failed, ``hold`` s after the batch reached the
        database, or at the batch's end."""
        deadline = None
        while not release.is_set() and not target_failed():
            if deadline is None and reached.is_set():
                deadline = time.monotonic() + hold
            if deadline is not None and time.monotonic() > deadline:
                break
            time.sleep(0.02)
        if locker is not None:
            locker.stdin.close()  # the writer rolls back and ends
        if half is not None:
            half.write(original[len(original) // 2:])
            half.close()

    watch = _Watch(ckpt, max(0, first - workers + 1), reached.set)
    undoer = threading.Thread(target=undo, daemon=True)
    watch.start()
    undoer.start()
    try:
        faulted, _ = run_file(b.ds, b.preds, b.tasks, config, out, b.fmt, progress=False)
    finally:
        watch.stop.set()
        release.set()
        watch.join()
        undoer.join()
        if locker is not None:
            locker.wait()
    if not path.exists() or path.read_bytes() != original:
        path.write_bytes(original)  # the user puts the file back before the re-run
    counts = _count(read_checkpoint(ckpt), b.tasks, expected)
    sample = next(iter(counts["errors"].values()), None)
    sample = sample.replace(str(path.parent) + os.sep, "") if sample else None
    rerun, _ = run_file(b.ds, b.preds, b.tasks, config, out, b.fmt, progress=False)
    again = _count({c.question_id: c for c in rerun}, b.tasks, expected)
    completed = not (again["missing"] or again["silent"] or again["errors"])
    n_err = len(counts["errors"])
    what = {"locked": "locked by a writer", "replaced": "rewritten in place", "deleted": "deleted"}[kind]
    sees = (f"{n_err} item(s) of {target} end with " + (f"'{_short(sample, 110)}'" if sample else "no error")
            + f"; the batch goes on ({len(faulted) - n_err} of {len(b.tasks)} finished)")
    return FaultRow(
        fault=f"SQLite file {what} during a batch", sees=sees, items=len(b.tasks),
        lost=len(counts["missing"]) + len(counts["silent"]) + len(counts["unclear"]), clear=len(counts["clear"]),
        rerun=f"yes ({n_err}/{n_err})" if completed else "no", seconds=round(time.perf_counter() - t0, 1),
        detail={"database": target, "reached": watch.fired, "stages": config.stage_names(),
                **{k: v for k, v in counts.items() if k != "errors"}, "errors": counts["errors"],
                "rerun_left": {k: v for k, v in again.items() if k != "errors"}})


# --- the model endpoint ------------------------------------------------------------


def _completion(text: str) -> dict[str, Any]:
    return {"id": "chatcmpl-fault", "object": "chat.completion", "created": 0, "model": "fault",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}


def fault_model_app(mode: str, delay: float = 1.0, release: threading.Event | None = None) -> Any:
    """An OpenAI-protocol chat server that misbehaves: ``hang`` (answers only once ``release`` is set),
    ``garbage`` (a 200 whose body is not a completion) or ``slow`` (after ``delay`` s, the
    conversation's own SQL: the model keeps it)."""
    app = FastAPI()
    app.state.requests = 0
    release = release or threading.Event()

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Any:
        body = await request.json()
        app.state.requests += 1
        if mode == "hang":
            while not release.is_set():
                await asyncio.sleep(0.05)
            return _completion("")
        if mode == "garbage":
            return PlainTextResponse("<html><body>upstream gone</body></html>", media_type="application/json")
        await asyncio.sleep(delay)
        own = [m["content"] for m in body["messages"] if m["role"] == "assistant"]
        return _completion(own[-1] if own else "SELECT 1")

    return app


def model_fault(mode: str, pred: Path, work: Path, *, tasks: int = 8, timeout: float = 2.0, delay: float = 1.0,
                workers: int = 4, data_root: str | None = None) -> FaultRow:
    """A batch whose refinement model (self-correction: one call per task) hangs, answers garbage or
    answers slowly (``delay`` s, under the ``timeout``).

    Every task must keep its original SQL; for a hang or garbage its trace says why (the stage
    failed, the original kept); for a slow endpoint the answer is used.
    """
    from sqlmend.batch import run_file
    from sqlmend.llm.server import ServerThread
    from sqlmend.pipeline import PipelineConfig

    t0 = time.perf_counter()
    work.mkdir(parents=True, exist_ok=True)
    b = make_batch(pred, work, dbs=1, per_db=tasks, data_root=data_root, copy=False)
    release = threading.Event()
    app = fault_model_app(mode, delay, release)
    with ServerThread(app) as server:
        toml = work / "models.toml"
        toml.write_text(f"""[llm]\nlog = false\n\n[endpoints.fault]\nkind = "openai"\nbase_url = "{server.url}"
model = "fault"\ntimeout = {timeout}\nmax_retries = 1\nbackoff = 0.1\napi_key_env = "SQLMEND_FAULT_KEY"
\n[stages]\nbaseline = "fault"\n""", encoding="utf-8")
        config = PipelineConfig(strategy="self-correction", llm_config=str(toml), workers=workers,
                                model_concurrency=workers)
        try:
            results, _ = run_file(b.ds, b.preds, b.tasks, config, work / "run", b.fmt, progress=False)
        finally:
            release.set()
    expected = {t.question_id: t.sql for t in b.tasks}
    counts = _count({c.question_id: c for c in results}, b.tasks, expected)
    traces = [next((s for s in c.stages if s.stage == "self-correction"), None) for c in results]
    failed = [s for s in traces if s is not None and s.status == "failed" and "original kept" in s.note]
    ran = [s for s in traces if s is not None and s.status == "ran"]
    note = (failed or ran or [None])[0]
    seconds = [c.stages[0].seconds if c.stages else 0.0 for c in results]
    what = {"hang": f"never answers (time-out {timeout:g} s, 1 retry)",
            "garbage": "answers a body that is not a completion",
            "slow": f"answers after {delay:g} s (time-out {timeout:g} s)"}[mode]
    if mode == "slow":
        sees = (f"answers used ({len(ran)}/{len(results)} '{_short(note.note if note else '', 40)}'), "
                f"{max(seconds):.1f} s at most per task")
        clear = 0
    else:
        sees = f"stage failed, original kept: '{_short(note.note if note else 'no trace', 110)}'"
        clear = len(failed)
    return FaultRow(
        fault=f"model endpoint {what}", sees=sees, items=len(b.tasks),
        lost=len(counts["missing"]) + len(counts["silent"]) + len(counts["unclear"]) + len(counts["clear"]),
        clear=clear, rerun="n/a (every task finished, original kept)" if mode != "slow" else "n/a",
        seconds=round(time.perf_counter() - t0, 1),
        detail={"requests": app.state.requests, "failed": len(failed), "ran": len(ran),
                **{k: v for k, v in counts.items() if k != "errors"}})


# --- the checkpoint's disk ---------------------------------------------------------


def _mount_tmpfs(folder: Path, size: str) -> bool:
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True).returncode == 0


def _file_size_limit(limit: int) -> Callable[[], None]:
    def limit_files() -> None:  # in the child: a write past `limit` bytes fails with EFBIG
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return limit_files


def disk_full_fault(pred: Path, work: Path, *, limit: int = 120, size_kib: int = 64, mount: bool = True,
                    data_root: str | None = None) -> FaultRow:
    """``sqlmend correct`` with its run folder on a full disk, then the same command with room.

    The disk is a ``size_kib`` KiB tmpfs (root, ``mount``) or, where mounting is not allowed, a
    file-size limit of that many bytes on the process (writes past it fail with EFBIG).
    """
    t0 = time.perf_counter()
    cmd = [sys.executable, "-c", "import sys; from sqlmend.cli import main; sys.exit(main())", "correct",
           "--dataset", "spider-dev", "--pred", str(pred), "--limit", str(limit), "--workers", "2",
           "--stages", "static,guard", "--quiet", *(["--data-root", data_root] if data_root else [])]
    clean = subprocess.run([*cmd, "--out", str(work / "clean")], capture_output=True, text=True, timeout=600)
    if clean.returncode != 0:
        raise ConfigError(f"the clean run failed: {clean.stderr[-500:]}")
    disk = work / "disk"
    disk.mkdir(parents=True, exist_ok=True)
    mounted = mount and _mount_tmpfs(disk, f"{size_kib}k")
    out = disk / "run"
    run = [*cmd, "--out", str(out)]
    try:
        full = subprocess.run(run, capture_output=True, text=True, timeout=600,
                              preexec_fn=None if mounted else _file_size_limit(size_kib * 1024))
        ckpt = out / "corrections.jsonl"
        raw = ckpt.read_bytes() if ckpt.exists() else b""
        lines = raw.splitlines()
        whole = len(_lines(ckpt))
        # a cut-off last line: counted once, as half, whether or not its bytes still parse
        unterminated = bool(raw) and not raw.endswith(b"\n")
        half = len(lines) - whole + (1 if unterminated and len(_lines(ckpt)) == whole and _parses(lines[-1]) else 0)
        if mounted:
            subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True, capture_output=True)
        resumed = subprocess.run(run, capture_output=True, text=True, timeout=600)
        identical = (resumed.returncode == 0 and (out / "corrected.sql").read_bytes()
                     == (work / "clean" / "corrected.sql").read_bytes())
        final = len(_lines(ckpt))
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(disk)], capture_output=True)
    said = (full.stderr.strip().splitlines() or ["(nothing)"])[-1]
    how = f"a {size_kib} KiB tmpfs" if mounted else f"a {size_kib} KiB file-size limit (EFBIG)"
    return FaultRow(
        fault=f"the checkpoint's disk full ({how})",
        sees=f"exit {full.returncode}: '{_short(said.replace(str(out), 'RUN'), 140)}'; {whole} whole lines, {half} half",
        items=limit, lost=(limit - final) + half + (0 if full.returncode else limit - whole),
        clear=limit - whole if full.returncode else 0,
        rerun=f"yes ({limit - whole}/{limit - whole}, corrected.sql identical)" if identical else "no",
        seconds=round(time.perf_counter() - t0, 1),
        detail={"mounted": mounted, "exit": full.returncode, "stderr": full.stderr[-2000:], "whole_lines": whole,
                "half_lines": half, "resumed_exit": resumed.returncode, "final_lines": final,
                "identical": identical})


# --- the PostgreSQL memory store under replicas ------------------------------------


def _client(urls: list[str], bodies: list[bytes], stop: threading.Event, log: list[dict[str, Any]],
            k: int) -> None:
    import httpx

    i = k
    with httpx.Client(timeout=60) as http:
        while not stop.is_set():
            body = bodies[i % len(bodies)]
            t = time.monotonic()
            try:
                r = http.post(urls[i % len(urls)] + "/correct", content=body,
                              headers={"content-type": "application/json"})
                answer = r.json() if r.status_code == 200 else {}
                memory = next((s for s in answer.get("stages", []) if s["stage"] == "memory"), {})
                log.append({"t": t, "status": r.status_code, "error": answer.get("error"),
                            "memory": memory.get("status"), "note": memory.get("note", "")})
            except httpx.HTTPError as exc:
                log.append({"t": t, "status": 0, "error": type(exc).__name__, "memory": None, "note": ""})
            i += len(urls) * 7 + 1


def memory_store_fault(pred: Path, work: Path, *, replicas: int = 2, clients: int = 4, before: float = 4.0,
                       down: float = 4.0, after: float = 6.0, writes: int = 30,
                       data_root: str | None = None) -> FaultRow:
    """The PostgreSQL memory store stopped for ``down`` s and restarted under ``replicas`` replicas.

    ``clients`` threads keep sending requests (stages static, memory, guard) the whole time;
    a writer adds ``writes`` items spread over the run, each retried until the store confirms
    it. Every request must be answered without error; while the store is down the memory stage
    says it skipped; after the restart it runs again; every confirmed item is stored once.
    """
    from sqlmend.testing.pgserver import PgServer, find_bin
    from sqlmend.stress.serve import bench_items, load_bodies, start_replicas, stop_replicas
    from sqlmend.memory.pgstore import PgMemoryStore

    if find_bin() is None:
        return FaultRow("PostgreSQL memory store stopped and restarted",
                        "not measured: no PostgreSQL server binaries (scripts/setup.sh installs them)")
    t0 = time.perf_counter()
    namespace = "faults"
    with PgServer.start() as server:
        server.admin("CREATE DATABASE faults")
        url = server.url("faults", user="postgres")
        bodies = load_bodies(pred, data_root, limit=60)
        db_ids = sorted({json.loads(b)["db_id"] for b in bodies})
        for item in bench_items(len(db_ids), db_ids, "seed"):  # every database has a memory
            with PgMemoryStore(url, item.db_id, namespace=namespace) as store:
                store.add(item)
        (work / "replicas").mkdir(parents=True, exist_ok=True)
        urls, procs = start_replicas(replicas, ["--stages", "static,memory,guard", "--memory-store", url,
                                                "--memory-namespace", namespace, "--no-log"],
                                     log_dir=work / "replicas")
        log: list[dict[str, Any]] = []
        confirmed: list[str] = []
        refused = [0]
        stop = threading.Event()
        items = bench_items(writes, db_ids, "write")
        total = before + down + after

        def writer() -> None:
            for k, item in enumerate(items):
                while time.monotonic() < start + total * k / len(items) and not stop.is_set():
                    time.sleep(0.01)
                while not stop.is_set():
                    try:
                        with PgMemoryStore(url, item.db_id, namespace=namespace) as store:
                            store.add(item)
                        confirmed.append(item.id)
                        break
                    except Exception:  # the store is down: not confirmed, tried again
                        refused[0] += 1
                        time.sleep(0.2)

        try:
            start = time.monotonic()
            threads = [threading.Thread(target=_client, args=(urls, bodies, stop, log, k)) for k in range(clients)]
            threads.append(threading.Thread(target=writer))
            for t in threads:
                t.start()
            time.sleep(before)
            server.halt()  # returns once the server has stopped (pg_ctl -w)
            t_down = time.monotonic()
            time.sleep(down)
            t_resume = time.monotonic()  # from here the server may accept connections again
            server.resume()
            t_up = time.monotonic()
            time.sleep(after)
            deadline = time.monotonic() + 30  # the last writes, once the store is back
            while len(confirmed) < len(items) and time.monotonic() < deadline:
                time.sleep(0.05)
            stop.set()
            for t in threads:
                t.join()
        finally:
            stop.set()
            stop_replicas(procs)
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            rows = conn.execute("SELECT id, count(*) FROM sqlmend_memory_items WHERE namespace = %s "
                                "AND question_id LIKE %s GROUP BY id", (namespace, "bench-write-%")).fetchall()
    stored = {r[0]: r[1] for r in rows}
    lost_items = [i for i in confirmed if i not in stored]
    duplicated = sum(n - 1 for n in stored.values())
    bad = [x for x in log if x["status"] != 200 or x["error"]]
    skipped = [x for x in log if x["memory"] == "skipped" and "unreachable" in x["note"]]
    back = [x["t"] - t_up for x in log if x["t"] > t_up and x["memory"] == "ran"]
    # sent after the server had stopped and before it was started again (a request sent while
    # pg_ctl was still shutting it down may rightly have run)
    ran_down = [x for x in log if t_down < x["t"] < t_resume and x["memory"] == "ran"]
    sees = (f"{len(log) - len(bad)}/{len(log)} requests answered; memory stage 'skipped: memory store "
            f"unreachable' on {len(skipped)}, 'ran' again {min(back) if back else float('nan'):.1f} s after "
            f"the restart; {refused[0]} writes refused while down, retried")
    return FaultRow(
        fault=f"PostgreSQL memory store stopped {down:g} s and restarted under {replicas} replicas",
        sees=sees, items=len(log) + len(items), lost=len(bad) + len(lost_items) + duplicated
        + (len(items) - len(confirmed)), clear=len(skipped) + refused[0],
        rerun=f"yes (writes: {len(confirmed)}/{len(items)} confirmed, stored once)",
        seconds=round(time.perf_counter() - t0, 1),
        detail={"requests": len(log), "failed_requests": bad[:5], "skipped_unreachable": len(skipped),
                "ran_while_down": len(ran_down), "back_after_s": round(min(back), 2) if back else None,
                "writes": len(items), "confirmed": len(confirmed), "refused_writes": refused[0],
                "stored": len(stored), "lost_items": lost_items, "duplicated": duplicated})


# --- all of them ----------------------------------------------------------------------


def ray_worker_fault(pred: Path, work: Path, *, dbs: int = 4, per_db: int = 10, workers: int = 2,
                     data_root: str | None = None) -> FaultRow:
    """A Ray worker process killed (SIGKILL) mid-batch under ``--engine ray`` on a local Ray (the one this
    process runs, if it runs one).

    The clean run of the same tasks with the local engine is the reference: Ray restarts the
    actor and runs its call again, and the run must finish with the local run's SQL for every task.

    Args:
        pred: a Spider-dev prediction file.
        work: a fresh folder.
        dbs: databases in the batch.
        per_db: tasks per database.
        workers: Ray actors.
        data_root: the folder holding ``spider/``.
    """
    try:
        import ray

        from sqlmend.batch.ray_engine import ACTOR_PREFIX, NAMESPACE
    except ImportError:
        return FaultRow("a Ray worker killed mid-batch", "not measured: ray is not installed "
                        "(pip install 'sqlmend[ray]')")
    from sqlmend.batch import run_file
    from sqlmend.pipeline import PipelineConfig, read_checkpoint

    t0 = time.perf_counter()
    b = make_batch(pred, work, dbs, per_db, data_root, copy=False)
    config = PipelineConfig(workers=workers)
    clean, clean_file = run_file(b.ds, b.preds, b.tasks, config, work / "clean", b.fmt, progress=False)
    expected = {c.question_id: c.sql for c in clean}
    out = work / "faulted"
    killed: list[int] = []

    def kill_one() -> None:
        names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                 if a["namespace"] == NAMESPACE and a["name"].startswith(ACTOR_PREFIX)]
        if names:
            pid = ray.get(ray.get_actor(sorted(names)[0], namespace=NAMESPACE).pid.remote(), timeout=60)
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    started = not ray.is_initialized()  # a Ray this process already runs (a test's cluster) is used as it is
    if started:
        ray.init(address="local", num_cpus=workers, num_gpus=0, include_dashboard=False,
                 logging_level="ERROR", log_to_driver=False)
    try:
        watch = _Watch(out / "corrections.jsonl", max(1, len(b.tasks) // 4), kill_one)
        watch.start()
        try:
            faulted, faulted_file = run_file(b.ds, b.preds, b.tasks, config, out, b.fmt, progress=False,
                                             engine="ray")
        finally:
            watch.stop.set()
            watch.join()
    finally:
        if started:
            ray.shutdown()
    counts = _count(read_checkpoint(out / "corrections.jsonl"), b.tasks, expected)
    identical = faulted_file.read_bytes() == clean_file.read_bytes()
    sees = (f"worker pid {killed[0] if killed else '?'} killed after {watch.lines} of {len(b.tasks)} items; "
            f"Ray restarted it and ran its call again; the batch finished, corrected file "
            f"{'identical to' if identical else 'DIFFERENT from'} the local run's")
    return FaultRow(
        fault="a Ray worker killed mid-batch (SIGKILL)", sees=sees if killed else "the worker was not killed",
        items=len(b.tasks), lost=len(counts["missing"]) + len(counts["silent"]) + len(counts["unclear"]),
        clear=len(counts["clear"]), rerun="n/a (retried by Ray within the run)",
        seconds=round(time.perf_counter() - t0, 1),
        detail={"killed": killed, "identical": identical, "fault_fired": watch.fired,
                **{k: v for k, v in counts.items() if k != "errors"}})


def run_faults(pred: Path, out: Path, only: list[str] | None = None, data_root: str | None = None,
               echo: Callable[[str], None] | None = None) -> list[FaultRow]:
    """Inject every fault (or those in ``only``) and write ``report.json`` and ``report.md`` under ``out``.

    Args:
        pred: a Spider-dev prediction file.
        out: the report folder (its ``work/`` is made afresh).
        only: fault names (:data:`FAULTS`).
        data_root: the folder holding ``spider/``.
        echo: called with each row's line as it is measured.

    Returns:
        One row per fault, in :data:`FAULTS` order.
    """
    unknown = sorted(set(only or []) - set(FAULTS))
    if unknown:
        raise ConfigError(f"unknown fault(s) {unknown}; known: {', '.join(FAULTS)}")
    work = out / "work"
    shutil.rmtree(work, ignore_errors=True)
    runs: dict[str, Callable[[Path], FaultRow]] = {
        "memory-store": lambda w: memory_store_fault(pred, w, data_root=data_root),
        "sqlite-locked": lambda w: sqlite_fault("locked", pred, w, data_root=data_root),
        "sqlite-replaced": lambda w: sqlite_fault("replaced", pred, w, data_root=data_root),
        "sqlite-deleted": lambda w: sqlite_fault("deleted", pred, w, data_root=data_root),
        "ray-worker": lambda w: ray_worker_fault(pred, w, data_root=data_root),
        "model-hangs": lambda w: model_fault("hang", pred, w, data_root=data_root),
        "model-garbage": lambda w: model_fault("garbage", pred, w, data_root=data_root),
        "model-slow": lambda w: model_fault("slow", pred, w, data_root=data_root),
        "disk-full": lambda w: disk_full_fault(pred, w, data_root=data_root),
    }
    rows = []
    for name in FAULTS:
        if only and name not in only:
            continue
        (work / name).mkdir(parents=True, exist_ok=True)
        row = runs[name](work / name)
        rows.append(row)
        if echo:
            echo(f"{name}: lost {row.lost}, {row.seconds} s")
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps([r.to_dict() for r in rows], indent=1, default=str) + "\n",
                                     encoding="utf-8")
    (out / "report.md").write_text(markdown(rows), encoding="utf-8")
    return rows
