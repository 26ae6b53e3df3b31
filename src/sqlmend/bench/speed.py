"""How fast the evaluator is: cold and warm gold cache, against a plain single-process sqlite3 loop.

The baseline is what an evaluation script usually does: for each question open the SQLite
file, run the gold and the prediction with a deadline (SQLite's progress handler, the same
time limit), compare the row sets. It shares no code with the evaluator, so its counts are
also an independent check of the evaluator's.
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from sqlmend.bench.datasets import Dataset
from sqlmend.bench.evaluate import evaluate, forget_loaded_caches
from sqlmend.bench.executor import Query, QueryPool, run_query
from sqlmend.bench.predictions import load_predictions


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


@dataclass
class SpeedResult:
    """Seconds for each way of evaluating the same files, and the correct counts each gave."""

    files: list[str]
    predictions: int
    cold: float = 0.0
    warm: float = 0.0
    plain: float = 0.0
    plain_db: float = 0.0
    counts: dict[str, dict[str, int]] = field(default_factory=dict)  # way -> file -> correct

    def to_dict(self) -> dict:
        return {"files": self.files, "predictions": self.predictions, "cold_s": round(self.cold, 3),
                "warm_s": round(self.warm, 3), "plain_sqlite3_s": round(self.plain, 3),
                "plain_sqlmend_db_s": round(self.plain_db, 3),
                "plain_over_cold": round(self.plain / self.cold, 2) if self.cold else None,
                "plain_over_warm": round(self.plain / self.warm, 2) if self.warm else None,
                "counts": self.counts}


def time_evaluation(dataset: Dataset, files: Sequence[str | Path], timeout: float = 30.0,
                    workers: int = 2, plain: bool = True) -> SpeedResult:
    """Time evaluating several prediction files: gold cache cold, then warm, then the plain loop.

    Each phase evaluates the files one after another on one pool of workers, started
    inside the timed span; the warm phase starts new workers and reads the gold cache
    from disk, so nothing but the cache file carries over from the cold phase.

    Args:
        dataset: the dataset the files answer.
        files: prediction files.
        timeout: per-query time limit in seconds.
        workers: worker processes of the evaluator.
        plain: also time the single-process loops (plain sqlite3, and through sqlmend.db).

    Returns:
        The timings and the correct counts of each way.
    """
    preds = {Path(f).name: load_predictions(f, dataset) for f in files}
    executable = sum(dataset.db_path(t.db_id) is not None for t in dataset)
    res = SpeedResult(files=list(preds), predictions=executable * len(preds))
    with tempfile.TemporaryDirectory(prefix="sqlmend-gold-") as cache:
        for way in ("cold", "warm"):
            # each phase from scratch: fresh workers (no verdicts remembered), the gold cache read from disk
            forget_loaded_caches()
            res.counts[way] = {}
            start = time.perf_counter()
            with QueryPool(workers=workers, timeout=timeout) as pool:
                for name, p in preds.items():
                    report = evaluate(dataset, p, timeout=timeout, label=name, cache_root=cache, pool=pool)
                    res.counts[way][name] = report.summary().correct
            setattr(res, way, time.perf_counter() - start)
    if plain:
        res.counts["plain"] = {}
        start = time.perf_counter()
        for name, p in preds.items():
            res.counts["plain"][name] = sum(plain_sqlite_eval(dataset, p, timeout).values())
        res.plain = time.perf_counter() - start
        res.counts["plain_db"] = {}
        start = time.perf_counter()
        for name, p in preds.items():
            res.counts["plain_db"][name] = sum(plain_db_eval(dataset, p, timeout).values())
        res.plain_db = time.perf_counter() - start
    return res
