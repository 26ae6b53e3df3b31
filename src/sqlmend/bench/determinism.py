"""``sqlmend bench determinism``: the same input gives the same output, however busy the machine.

Each prediction file is corrected twice with the same settings: once with one worker, and
once with several workers while CPU-bound processes (``hogs``) keep every core busy. The two
``corrected.<ext>`` files must be byte-identical: every decision of the pipeline depends on
the input and the settings alone (limits count the engine's work, :mod:`sqlmend.db.sqlite`;
outputs are ordered by the dataset, never by which thread finished first). The report also
pairs the first run with the uncorrected file (fixed / regressed / ΔEX), so that a change of
limits shows in the fixes it costs.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator

from sqlmend.batch import run_file
from sqlmend.bench.correct import paired_row
from sqlmend.evaluation.evaluate import evaluate
from sqlmend.data.datasets import Dataset, load_dataset
from sqlmend.data.predictions import load_predictions, sniff_pred_format
from sqlmend.data.sampling import choose

#: A process that keeps one core busy until it is killed (at most ``HOG_SECONDS``).
HOG_SECONDS = 3600
_HOG = f"import time\nend = time.monotonic() + {HOG_SECONDS}\nwhile time.monotonic() < end: pass\n"


@dataclass
class DeterminismRow:
    """One prediction file: the two runs' digests, and the first run's paired counts."""

    pred: str
    n: int
    identical: bool
    sha_idle: str
    sha_loaded: str
    differing: int  # questions whose corrected SQL differs between the two runs
    fixed: int
    regressed: int
    delta_ex: float
    item_errors_idle: int
    item_errors_loaded: int
    seconds_idle: float
    seconds_loaded: float


@contextmanager
def cpu_hogs(n: int) -> Iterator[list[subprocess.Popen]]:
    """Start ``n`` CPU-bound Python processes; kill them on exit."""
    procs = [subprocess.Popen([sys.executable, "-c", _HOG], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for _ in range(n)]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def bench_determinism(dataset: str, preds: list[Path], config: Any, out: Path, *, workers: int = 4,
                      hogs: int = 2, limit: int | None = None, skip: int = 0, timeout: float = 30.0,
                      data_root: str | None = None, progress: bool = False) -> list[DeterminismRow]:
    """Correct each file twice (1 worker; ``workers`` beside ``hogs`` busy processes) and compare.

    Args:
        dataset: dataset name or task file.
        preds: prediction files.
        config: the :class:`~sqlmend.pipeline.PipelineConfig` of both runs (``workers`` is set per run).
        out: the output folder (``<file>/idle`` and ``<file>/loaded`` run folders, started afresh).
        workers: the second run's workers.
        hogs: CPU-bound processes beside the second run.
        limit: the first N tasks of each file only (after ``skip``).
        skip: the first tasks of each file left out (a slice of a file: ``skip`` then ``limit``).
        timeout: seconds per SQL execution of the evaluation.
        data_root: the folder holding ``spider/``.
        progress: show progress bars.

    Returns:
        One row per file; ``report.json`` and ``report.md`` are written under ``out``.
    """
    rows = []
    for path in preds:
        ds = load_dataset(dataset, data_root=data_root)
        pred = load_predictions(path, ds)
        tasks = choose(ds.with_sql(pred)[skip:], limit or None)
        runs: dict[str, tuple[list, Path, float]] = {}
        for name, n_workers, n_hogs in (("idle", 1, 0), ("loaded", workers, hogs)):
            folder = out / path.stem / name
            shutil.rmtree(folder, ignore_errors=True)
            with cpu_hogs(n_hogs):
                t0 = time.perf_counter()
                results, target = run_file(ds, pred, tasks, config.model_copy(update={"workers": n_workers}),
                                           folder, sniff_pred_format(path), progress=progress,
                                           manifest={"dataset": dataset, "pred": str(path.resolve())})
                runs[name] = (results, target, time.perf_counter() - t0)
        idle, loaded = runs["idle"], runs["loaded"]
        by_id = {c.question_id: c.sql for c in loaded[0]}
        sub = Dataset(name=ds.name, tasks=[ds.task(t.question_id) for t in tasks], db_root=ds.db_root,
                      source=ds.source)
        before = evaluate(sub, {t.question_id: t.sql for t in tasks}, timeout=timeout, progress=progress)
        after = evaluate(sub, {c.question_id: c.sql for c in idle[0]}, timeout=timeout, progress=progress)
        paired = paired_row(path.stem, "idle", idle[0], before, after)
        rows.append(DeterminismRow(
            pred=path.stem, n=len(tasks), identical=idle[1].read_bytes() == loaded[1].read_bytes(),
            sha_idle=_sha(idle[1]), sha_loaded=_sha(loaded[1]),
            differing=sum(1 for c in idle[0] if by_id.get(c.question_id) != c.sql),
            fixed=paired.fixed, regressed=paired.regressed, delta_ex=paired.delta_ex,
            item_errors_idle=paired.item_errors,
            item_errors_loaded=sum(1 for c in loaded[0] if c.error),
            seconds_idle=round(idle[2], 1), seconds_loaded=round(loaded[2], 1)))
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n", encoding="utf-8")
    (out / "report.md").write_text(markdown(rows, workers, hogs), encoding="utf-8")
    return rows


def markdown(rows: list[DeterminismRow], workers: int, hogs: int) -> str:
    """The report as a markdown table."""
    head = (f"| file | tasks | 1 worker = {workers} workers + {hogs} hogs | differing | fixed | regressed | ΔEX "
            "| item errors (idle / loaded) | s (idle / loaded) |\n| --- | ---: | --- | ---: | ---: | ---: | ---: "
            "| --- | --- |\n")
    return head + "".join(
        f"| {r.pred} | {r.n} | {'identical' if r.identical else 'DIFFERENT'} ({r.sha_idle}) | {r.differing} "
        f"| {r.fixed} | {r.regressed} | {r.delta_ex:+.2f} | {r.item_errors_idle} / {r.item_errors_loaded} "
        f"| {r.seconds_idle} / {r.seconds_loaded} |\n" for r in rows)
