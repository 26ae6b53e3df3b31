"""Correct a prediction file (``sqlmend correct --dataset --pred --out``): choose the tasks, keep a
shard, run the pipeline with its checkpoint, write the run folder (:mod:`sqlmend.batch.folder`).
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from sqlmend.batch.folder import RUN_FILE, file_sha256, in_shard, write_outputs
from sqlmend.data.datasets import load_dataset
from sqlmend.data.predictions import load_predictions, sniff_pred_format
from sqlmend.data.sampling import choose
from sqlmend.db.account import admit
from sqlmend.errors import ConfigError
from sqlmend.pipeline import correct_batch, task_logins
from sqlmend.types import Correction, Task


def check_engine(engine: str) -> str | None:
    """Read ``--engine``: ``local`` (threads here) gives None; ``ray`` (``RAY_ADDRESS``, else a
    local Ray) gives ``""``; ``ray://HOST:PORT`` gives that address.

    >>> check_engine("local") is None, check_engine("ray"), check_engine("ray://head:10001")
    (True, '', 'ray://head:10001')

    Raises:
        ConfigError: another value.
    """
    if engine == "local":
        return None
    if engine == "ray" or (engine.startswith("ray://") and len(engine) > len("ray://")):
        return "" if engine == "ray" else engine
    raise ConfigError(f"unknown engine {engine!r}: expected local, ray or ray://HOST:PORT")


def _correct_tasks(tasks: list[Task], config: Any, checkpoint: Path, progress: bool, db_root: Any,
                   engine: str) -> list[Correction]:
    address = check_engine(engine)
    if address is None:
        return correct_batch(tasks, config, checkpoint=checkpoint, progress=progress, db_root=db_root)
    try:
        from sqlmend.batch.ray_engine import correct_batch_ray
    except ImportError as exc:
        if not (exc.name or "").startswith("ray"):
            raise
        raise ConfigError(f"--engine {engine} needs Ray: pip install 'sqlmend[ray]' ({exc})") from None
    return correct_batch_ray(tasks, config, checkpoint=checkpoint, progress=progress, db_root=db_root,
                             address=address or None)


def run_file(ds: Any, preds: dict[str, str], tasks: list[Task], config: Any, out: Path, fmt: str,
             progress: bool = True, manifest: dict[str, Any] | None = None,
             engine: str = "local") -> tuple[list[Correction], Path]:
    """Correct ``tasks`` of a prediction file and write the run folder ``out``.

    Args:
        ds: the dataset.
        preds: the whole prediction file.
        tasks: the tasks to correct (their ``sql`` is the prediction).
        config: the :class:`~sqlmend.pipeline.PipelineConfig` (the databases are the dataset's).
        out: the run folder (a rerun resumes from its ``corrections.jsonl``).
        fmt: the prediction file's format.
        progress: show a progress bar.
        manifest: what to record in ``run.json`` beside the configuration.
        engine: where the tasks run (:func:`check_engine`): ``local`` threads, or Ray
            (``ray``, ``ray://HOST:PORT``); the run folder is the same.

    Returns:
        The corrections and the path of the corrected prediction file.

    Raises:
        ConfigError: a database's login may do more than read, under ``config.require_read_only_login``
            (without it such a login is warned about once, where sqlmend's own lock does not hold).
    """
    admit(task_logins(tasks, ds.db_root), config.require_read_only_login)  # before anything is written
    out.mkdir(parents=True, exist_ok=True)
    record = {**(manifest or {}), "format": fmt, "tasks_run": len(tasks), "engine": engine,
              "config": config.model_dump(mode="json")}
    (out / RUN_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    t0 = time.perf_counter()
    results = _correct_tasks(tasks, config, out / "corrections.jsonl", progress, ds.db_root, engine)
    return results, write_outputs(out, ds, preds, results, fmt, time.perf_counter() - t0)


def with_alternatives(tasks: list[Task], ds: Any, files: list[Path]) -> list[Task]:
    """The tasks with the answers of other prediction files as their alternatives (``--alt``), after
    those a task file gives; each file is read as ``--pred`` is (any format), aligned with the dataset.

    Raises:
        DatasetError: a file does not answer the dataset's questions (the reader names the line).
    """
    if not files:
        return tasks
    alts = [load_predictions(f, ds) for f in files]
    return [replace(t, alternatives=[*t.alternatives, *(a[t.question_id] for a in alts if t.question_id in a)])
            for t in tasks]


def correct_file(dataset: str, pred: Path, out: Path, config: Any, *, data_root: str | None = None,
                 db_root: str | None = None, limit: int | None = None, sample: int | None = None,
                 seed: int = 0, shard: tuple[int, int] | None = None,
                 progress: bool = True, engine: str = "local",
                 alternatives: list[Path] | None = None) -> tuple[list[Correction], Path]:
    """``sqlmend correct --dataset --pred --out``: choose the tasks, keep a shard, run, write.

    Args:
        dataset: dataset name or task file.
        pred: the prediction file.
        out: the run folder.
        config: the pipeline configuration.
        data_root: the folder holding ``spider/`` (named datasets).
        db_root: the databases folder ``<db_id>/<db_id>.sqlite`` (wins over the dataset's).
        limit: the first N tasks.
        sample: a seeded sample of N tasks (:func:`sqlmend.data.sampling.seeded_sample`).
        seed: the sample's seed.
        shard: ``(K, N)``: only the tasks of shard K of N.
        progress: show a progress bar.
        engine: ``local``, ``ray`` or ``ray://HOST:PORT`` (:func:`check_engine`).
        alternatives: prediction files of other answers to the same questions (``--alt``), aligned
            with ``pred``: each task's alternatives, for the consensus stage.

    Returns:
        The corrections and the corrected prediction file.
    """
    check_engine(engine)
    ds = load_dataset(dataset, data_root=data_root, db_root=db_root)
    preds = load_predictions(pred, ds)
    alternatives = [Path(a) for a in alternatives or []]
    chosen = with_alternatives(choose(ds.with_sql(preds), limit, sample, seed), ds, alternatives)
    manifest = {"dataset": dataset, "pred": str(Path(pred).resolve()), "pred_sha256": file_sha256(pred),
                "alternatives": [str(a.resolve()) for a in alternatives],
                "alternatives_sha256": [file_sha256(a) for a in alternatives],
                "data_root": data_root,
                "db_root": db_root, "selection": {"limit": limit, "sample": sample, "seed": seed},
                "tasks_selected": len(chosen), "shard": list(shard) if shard else None}
    return run_file(ds, preds, in_shard(chosen, shard), config, out, sniff_pred_format(pred),
                    progress=progress, manifest=manifest, engine=engine)
