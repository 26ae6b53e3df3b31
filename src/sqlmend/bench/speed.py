"""How fast the evaluator is: cold and warm gold cache, against a plain single-process sqlite3 loop.

The baseline is what an evaluation script usually does: for each question open the SQLite
file, run the gold and the prediction with a deadline (SQLite's progress handler, the same
time limit), compare the row sets. It shares no code with the evaluator, so its counts are
also an independent check of the evaluator's.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from sqlmend.evaluation.evaluate import evaluate, forget_loaded_caches
from sqlmend.evaluation.executor import Query, QueryPool, run_query
from sqlmend.data.datasets import Dataset
from sqlmend.data.predictions import load_predictions
from sqlmend.sql.safety import forget_verdicts


def _run(conn: sqlite3.Connection, sql: str, timeout: float) -> list[tuple] | None:
    deadline = time.monotonic() + timeout
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)
    try:
        return conn.execute(sql).fetchall()
    except (sqlite3.Error, sqlite3.Warning, ValueError):
        return None
    finally:
        conn.set_progress_handler(None, 0)


def plain_sqlite_eval(dataset: Dataset, predictions: Mapping[str, str], timeout: float = 30.0) -> dict[str, bool]:
    """The straightforward loop: one process, plain sqlite3, gold and prediction per question.

    Args:
        dataset: the tasks.
        predictions: ``{question_id: sql}``.
        timeout: per-query time limit in seconds (progress-handler deadline).

    Returns:
        ``{question_id: correct}`` for the questions whose database exists and whose gold runs.
    """
    out: dict[str, bool] = {}
    for task in dataset:
        path = dataset.db_path(task.db_id)
        if path is None:
            continue
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.text_factory = lambda b: b.decode("utf-8", errors="replace")
        try:
            gold = _run(conn, task.gold or "", timeout)
            if gold is None:
                continue
            pred = _run(conn, predictions.get(task.question_id, ""), timeout)
            out[task.question_id] = pred is not None and set(pred) == set(gold)
        finally:
            conn.close()
    return out


def plain_db_eval(dataset: Dataset, predictions: Mapping[str, str], timeout: float = 30.0) -> dict[str, bool]:
    """The same loop in one process through ``sqlmend.db`` (its read-only check included), no worker pool.

    Separates the cost of the db layer from the cost of the process pool.

    Args:
        dataset: the tasks.
        predictions: ``{question_id: sql}``.
        timeout: per-query time limit in seconds.

    Returns:
        ``{question_id: correct}`` for the questions whose database exists and whose gold runs.
    """
    out: dict[str, bool] = {}
    dbs: OrderedDict = OrderedDict()
    try:
        for task in dataset:
            path = dataset.db_path(task.db_id)
            if path is None:
                continue
            gold = run_query(dbs, Query(str(path), task.gold or ""), timeout)
            if gold.ok:
                pred = run_query(dbs, Query(str(path), predictions.get(task.question_id, "")), timeout)
                out[task.question_id] = pred.ok and set(pred.rows) == set(gold.rows)
    finally:
        for db in dbs.values():
            db.close()
    return out


#: The ways :func:`time_evaluation` times, in the order each repetition runs them.
WAYS = ("cold", "warm", "plain", "plain_db")


@dataclass
class SpeedResult:
    """Seconds for each way of evaluating the same files, and the correct counts each gave.

    ``cold`` etc. are wall-clock seconds, the best of ``repeat`` runs; ``cpu[way]`` is the CPU
    time (user + system, worker processes included) of that best run, which depends less on
    what else the machine is running.
    """

    files: list[str]
    predictions: int
    workers: int = 2
    repeat: int = 1
    cold: float = 0.0
    warm: float = 0.0
    plain: float = 0.0
    plain_db: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)  # way -> CPU seconds
    counts: dict[str, dict[str, int]] = field(default_factory=dict)  # way -> file -> correct

    def ratio(self, way: str) -> float | None:
        """Wall-clock seconds of ``way`` over the plain sqlite3 loop's (None without the loop)."""
        return getattr(self, way) / self.plain if self.plain else None

    def to_dict(self) -> dict:
        return {"files": self.files, "predictions": self.predictions, "workers": self.workers,
                "repeat": self.repeat, "cold_s": round(self.cold, 3),
                "warm_s": round(self.warm, 3), "plain_sqlite3_s": round(self.plain, 3),
                "plain_sqlmend_db_s": round(self.plain_db, 3),
                "cpu_s": {k: round(v, 3) for k, v in self.cpu.items()},
                "plain_over_cold": round(self.plain / self.cold, 2) if self.cold else None,
                "plain_over_warm": round(self.plain / self.warm, 2) if self.warm else None,
                "counts": self.counts}


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system  # reaped workers included


def time_evaluation(dataset: Dataset, files: Sequence[str | Path], timeout: float = 30.0,
                    workers: int = 2, plain: bool = True, repeat: int = 1) -> SpeedResult:
    """Time evaluating several prediction files: gold cache cold, then warm, then the plain loops.

    Each evaluator phase evaluates the files one after another on one pool of workers,
    started inside the timed span. Every run starts from nothing held in memory: the
    read-only verdicts are forgotten (workers are forked from this process), the cold
    phase gets an empty gold cache folder and the warm phase reads the cache file from
    disk. With ``repeat`` > 1 the ways take turns, so that a change in the machine's
    load touches all of them, and each way's best run is kept.

    Args:
        dataset: the dataset the files answer.
        files: prediction files.
        timeout: per-query time limit in seconds.
        workers: worker processes of the evaluator.
        plain: also time the single-process loops (plain sqlite3, and through sqlmend.db).
        repeat: runs of each way (at least 1).

    Returns:
        The timings, CPU times and correct counts of each way.
    """
    preds = {Path(f).name: load_predictions(f, dataset) for f in files}
    executable = sum(dataset.db_path(t.db_id) is not None for t in dataset)
    res = SpeedResult(files=list(preds), predictions=executable * len(preds), workers=workers,
                      repeat=max(1, repeat))
    ways = WAYS if plain else WAYS[:2]
    best: dict[str, float] = {}
    for _ in range(res.repeat):
        with tempfile.TemporaryDirectory(prefix="sqlmend-gold-") as cache:
            for way in ways:
                forget_verdicts()
                forget_loaded_caches()
                cpu, start = _cpu(), time.perf_counter()
                counts = _run_way(way, dataset, preds, timeout, workers, cache)
                wall, cpu = time.perf_counter() - start, _cpu() - cpu
                if way not in best or wall < best[way]:
                    best[way] = wall
                    setattr(res, way, wall)
                    res.cpu[way] = cpu
                res.counts[way] = counts
    return res


def _run_way(way: str, dataset: Dataset, preds: Mapping[str, Mapping[str, str]], timeout: float,
             workers: int, cache: str) -> dict[str, int]:
    """Evaluate every file one way; return the correct count per file."""
    if way == "plain":
        return {name: sum(plain_sqlite_eval(dataset, p, timeout).values()) for name, p in preds.items()}
    if way == "plain_db":
        return {name: sum(plain_db_eval(dataset, p, timeout).values()) for name, p in preds.items()}
    with QueryPool(workers=workers, timeout=timeout) as pool:  # "cold" then "warm": same cache folder
        return {name: evaluate(dataset, p, timeout=timeout, label=name, cache_root=cache, pool=pool)
                .summary().correct for name, p in preds.items()}
