"""A run folder of ``sqlmend correct``: its files, its shards, and merging them.

A run folder holds:

* ``corrections.jsonl``: one correction per task (the checkpoint: a rerun resumes from it);
* ``summary.json``: the batch's totals (:func:`sqlmend.pipeline.summarize`), item errors, wall time;
* ``corrected.<ext>``: the whole prediction file in its own format, corrected SQL for the
  tasks run and the input elsewhere;
* ``run.json``: what was run (dataset, prediction file, selection, shard, stages), so that
  :func:`merge_runs` can check that shards belong together.

``--shard K/N`` keeps the tasks of the selection whose question id hashes to shard K
(:func:`shard_of`: SHA-256 of the id, modulo N), so N machines each run a disjoint part
and :func:`merge_runs` gives the unsharded run's ``corrected.<ext>`` and ``summary.json``
(wall and per-stage seconds aside).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from sqlmend.data.datasets import load_dataset
from sqlmend.data.predictions import load_predictions, write_predictions
from sqlmend.errors import ConfigError
from sqlmend.pipeline import read_checkpoint, summarize
from sqlmend.types import Correction, Task, json_text

RUN_FILE = "run.json"
EXTENSIONS = {"spider": "sql", "bird": "json", "jsonl": "jsonl"}
#: PipelineConfig fields that may differ between the shards of one run (machine-specific).
_PER_MACHINE = ("workers", "model_concurrency")


def parse_shard(spec: str | None) -> tuple[int, int] | None:
    """Read ``K/N`` (1 <= K <= N).

    >>> parse_shard("2/3")
    (2, 3)
    >>> parse_shard(None) is None
    True
    """
    if spec is None:
        return None
    k, sep, n = spec.partition("/")
    try:
        shard = (int(k), int(n))
    except ValueError:
        shard = None
    if not sep or shard is None or not 1 <= shard[0] <= shard[1]:
        raise ConfigError(f"bad shard {spec!r}: expected K/N with 1 <= K <= N, e.g. 1/4")
    return shard


def shard_of(question_id: str, n: int) -> int:
    """The shard (1..n) a question id belongs to: SHA-256 of the id modulo n, plus one.

    >>> [shard_of(q, 3) for q in ("0", "1", "2", "3")] == [shard_of(q, 3) for q in ("0", "1", "2", "3")]
    True
    """
    return int(hashlib.sha256(question_id.encode("utf-8")).hexdigest(), 16) % n + 1


def in_shard(tasks: Sequence[Task], shard: tuple[int, int] | None) -> list[Task]:
    """The tasks of shard ``(K, N)`` (all tasks when ``shard`` is None), in their order."""
    if shard is None:
        return list(tasks)
    k, n = shard
    return [t for t in tasks if shard_of(t.question_id, n) == k]


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file's bytes (how shards made on different machines know they read the same file)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_outputs(out: Path, ds: Any, preds: dict[str, str], results: list[Correction], fmt: str,
                  wall: float) -> Path:
    """Write ``summary.json`` and ``corrected.<ext>`` of a run (or of merged shards).

    Args:
        out: the run folder.
        ds: the dataset.
        preds: the whole input prediction file, ``{question_id: sql}``.
        results: the corrections of the tasks run.
        fmt: the prediction file's format (``spider``, ``bird`` or ``jsonl``).
        wall: the run's wall-clock seconds (summed over shards when merged).

    Returns:
        The corrected prediction file.
    """
    corrected = dict(preds)
    corrected.update({c.question_id: c.sql for c in results})
    target = out / f"corrected.{EXTENSIONS[fmt]}"
    write_predictions(target, corrected, ds, fmt=fmt)
    summary = summarize(results).to_dict()
    summary["wall_seconds"] = round(wall, 2)
    order = {t.question_id: i for i, t in enumerate(ds.tasks)}
    summary["item_errors"] = {c.question_id: c.error
                              for c in sorted(results, key=lambda c: order.get(c.question_id, len(order)))
                              if c.error}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return target


@dataclass
class Merged:
    """What :func:`merge_runs` wrote."""

    corrections: list[Correction]
    target: Path
    shards: int


def _comparable(run: dict[str, Any]) -> dict[str, Any]:
    config = {k: v for k, v in run.get("config", {}).items() if k not in _PER_MACHINE}
    keys = ("dataset", "pred_sha256", "alternatives_sha256", "format", "selection", "tasks_selected")
    return {k: run.get(k) for k in keys} | {"config": config}


def merge_runs(run_dirs: Sequence[Path], out: Path, pred: Path | None = None,
               data_root: str | None = None, db_root: str | None = None) -> Merged:
    """Merge the shard folders of one run into the folder the unsharded run would have written.

    Checks that the folders are shards ``1..N`` of the same run (same dataset, prediction
    file bytes, selection and stages), none missing, each complete, no question in two of them.
    The shards may come from different machines: only the workers and model concurrency may differ.

    Args:
        run_dirs: the shards' run folders.
        out: the merged run folder (``corrections.jsonl`` in dataset order, ``summary.json``,
            ``corrected.<ext>``, ``run.json``).
        pred: the prediction file here (default: the path the first shard recorded); it must
            have the bytes the shards read.
        data_root: the folder holding ``spider/`` here (default: the first shard's).
        db_root: the databases folder here (default: the first shard's).

    Returns:
        The merged corrections and the corrected prediction file.

    Raises:
        ConfigError: the folders are not the complete shards of one run.
        DatasetError: the dataset or the prediction file cannot be read (from the loaders).
    """
    if not run_dirs:
        raise ConfigError("merge needs at least one run folder")
    runs, summaries = [], []
    for d in run_dirs:
        try:
            runs.append(json.loads((Path(d) / RUN_FILE).read_text(encoding="utf-8")))
            summaries.append(json.loads((Path(d) / "summary.json").read_text(encoding="utf-8")))
        except (OSError, ValueError) as e:
            raise ConfigError(f"{d} is not a finished `sqlmend correct` run folder: {e}") from None
    first = _comparable(runs[0])
    for d, run in zip(run_dirs, runs):
        if _comparable(run) != first:
            diff = sorted(k for k, v in _comparable(run).items() if first.get(k) != v)
            raise ConfigError(f"{d} is not a shard of the same run as {run_dirs[0]} (differs in {', '.join(diff)})")
    shards = [tuple(r["shard"]) if r.get("shard") else (1, 1) for r in runs]
    n = shards[0][1]
    if any(s[1] != n for s in shards) or sorted(s[0] for s in shards) != list(range(1, n + 1)):
        raise ConfigError(f"need shards 1..{n} of {n} once each, got {', '.join(f'{k}/{m}' for k, m in shards)}")
    results: dict[str, Correction] = {}
    for d, run in zip(run_dirs, runs):
        done = read_checkpoint(Path(d) / "corrections.jsonl")
        if len(done) != run["tasks_run"]:
            raise ConfigError(f"{d}: {len(done)} of {run['tasks_run']} tasks finished; rerun its command to finish")
        twice = set(done) & set(results)
        if twice:
            raise ConfigError(f"{d}: questions also in another shard, e.g. {sorted(twice)[:3]}")
        results.update(done)
    if len(results) != runs[0]["tasks_selected"]:
        raise ConfigError(f"the shards hold {len(results)} tasks, the run selected {runs[0]['tasks_selected']}")
    run = runs[0]
    pred_path = Path(pred or run["pred"])
    if not pred_path.is_file() or file_sha256(pred_path) != run["pred_sha256"]:
        raise ConfigError(f"{pred_path} is not the prediction file the shards corrected "
                          "(give the same file with --pred)")
    ds = load_dataset(run["dataset"], data_root=data_root or run.get("data_root"),
                      db_root=db_root or run.get("db_root"))
    preds = load_predictions(pred_path, ds)
    ordered = [results[t.question_id] for t in ds.tasks if t.question_id in results]
    out.mkdir(parents=True, exist_ok=True)
    with (out / "corrections.jsonl").open("w", encoding="utf-8") as fh:
        for c in ordered:
            fh.write(json_text(c.to_dict()) + "\n")
    merged_run = {**run, "shard": None, "tasks_run": len(ordered), "merged_from": [str(d) for d in run_dirs]}
    (out / RUN_FILE).write_text(json.dumps(merged_run, indent=1) + "\n", encoding="utf-8")
    wall = sum(s.get("wall_seconds", 0.0) for s in summaries)
    return Merged(ordered, write_outputs(out, ds, preds, ordered, run["format"], wall), n)
