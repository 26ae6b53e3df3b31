"""``sqlmend bench memory`` and ``sqlmend memory build``: MIRA's repair memory on a split (MIRA §4).

The history part of a split (:mod:`sqlmend.data.split`) gives the confirmed
corrections (its wrong predictions, with the gold as the correction); each
database's memory is built from them (:func:`build_all`), the test part is
corrected with the memory stage, and the two evaluations are paired
(:func:`bench_memory`).
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

from sqlmend.data.split import Split, load_split, save_split, split_tasks
from sqlmend.db import connect
from sqlmend.errors import SqlmendError
from sqlmend.memory.build import BuildReport, ConfirmedCorrection, build_memory
from sqlmend.memory.store import is_url, open_store, store_root
from sqlmend.progress import bar as progress_bar

ABLATIONS = {"full": {}, "no-decompose": {"decompose": False}, "no-verify": {"verify": False},
             "no-local": {"local": False}}


def llm_config(model: str | None) -> Any:
    """The llm config of ``--model``: None (mechanical only), ``"local"`` or a config file."""
    if not model:
        return None
    from sqlmend import llm

    return llm.LLMConfig.local() if model == "local" else llm.LLMConfig.load(model)


def split_for(dataset: Any, path: Path | None, fraction: float, seed: int) -> Split:
    """The split stored at ``path``; else drawn (and saved at ``path`` when given)."""
    if path is not None and path.exists():
        return load_split(path)
    split = split_tasks(dataset.tasks, fraction=fraction, seed=seed)
    if path is not None:
        save_split(split, path)
    return split


def history_cases(dataset: Any, preds: dict[str, str], split: Split, workers: int,
                  progress: bool = True) -> dict[str, list[ConfirmedCorrection]]:
    """The confirmed corrections of the history part: wrong predictions with their gold."""
    from sqlmend.evaluation.evaluate import evaluate
    from sqlmend.data.datasets import Dataset

    hist = Dataset(dataset.name, [dataset.task(q) for q in split.history], db_root=dataset.db_root)
    report = evaluate(hist, preds, workers=workers, progress=progress, label="history")
    cases: dict[str, list[ConfirmedCorrection]] = defaultdict(list)
    for r in report.results:
        if r.scored and not r.correct and dataset.db_path(r.db_id) is not None:
            t = dataset.task(r.question_id)
            cases[t.db_id].append(ConfirmedCorrection(t.question_id, t.question, preds[t.question_id], t.gold or ""))
    return cases


def build_all(dataset: Any, cases: dict[str, list[ConfirmedCorrection]], folder: Path | str, cfg: Any = None,
              decompose: bool = True, fresh: bool = False, progress: bool = True,
              on_error: Callable[[str, SqlmendError], None] | None = None,
              namespace: str = "default") -> BuildReport:
    """Rebuild the memory of every database of ``cases`` in ``folder``.

    Args:
        dataset: the dataset (its database paths).
        cases: the historical corrections per database.
        folder: the store folder, or a ``postgresql://`` URL (then ``namespace`` names the memory).
        cfg: an llm config (judge, recovery, embedder); None: mechanical items only.
        decompose: False: the "w/o repair-unit decomposition" ablation.
        fresh: True empties the whole folder first; False clears only the stores
            of the databases in ``cases`` (other databases' memories stay).
        progress: show a progress bar.
        on_error: told of a database whose build failed (the others go on).
        namespace: the memory inside a PostgreSQL store.

    Returns:
        The summed build report.
    """
    if not is_url(folder):
        if fresh:
            shutil.rmtree(folder, ignore_errors=True)
        Path(folder).mkdir(parents=True, exist_ok=True)
    total = BuildReport()
    judge = cfg.resolve("judge") if cfg else None
    recovery = cfg.resolve("recovery") if cfg else None
    embedder = cfg.resolve("embedder") if cfg else None
    for db_id in progress_bar(sorted(cases), desc="memory build", unit="db", disable=not progress):
        try:
            with connect(dataset.db_path(db_id)) as db, open_store(folder, db_id, namespace=namespace) as store:
                store.clear()
                total.add(build_memory(db, db_id, cases[db_id], store, judge, embedder, decompose,
                                       recovery_backend=recovery))
        except SqlmendError as e:
            if on_error is not None:
                on_error(db_id, e)
    return total


def log_usage(since: float, tag: str | None = None) -> dict[str, int]:
    """Calls, cache hits, errors and tokens in the llm call log since ``since`` (all stages)."""
    from sqlmend.llm import CallLog

    rows = CallLog().summary(tag=tag, since=since)
    return {k: int(sum(r.get(k) or 0 for r in rows)) for k in ("calls", "cache_hits", "errors", "tokens_in",
                                                                "tokens_out")} | \
        {"by_stage": {r["stage"]: int(r["calls"]) for r in rows}}


def bench_memory(pred: Path, dataset: str, split_path: Path | None, fraction: float, seed: int,
                 ablation: str, model: str | None, workers: int, databases: list[str] | None = None,
                 progress: bool = True, report_build: Callable[[BuildReport, Path], None] | None = None,
                 on_error: Callable[[str, SqlmendError], None] | None = None) -> dict[str, Any]:
    """Build memory from the history part, correct the test part, pair the evaluations (MIRA §4).

    Args:
        pred: the prediction file.
        dataset: the dataset name.
        split_path: the split file (created if absent).
        fraction: history share per database.
        seed: split seed.
        ablation: a key of :data:`ABLATIONS`.
        model: None (mechanical), "local" or an llm config file.
        workers: evaluation worker processes.
        databases: only these databases (history and test); None: all.
        progress: show progress bars.
        report_build: told of the build's report and folder once the memory is built.
        on_error: told of a database whose memory build failed.

    Returns:
        The JSON-able result: items, paired report, offline and online usage
        (counted by the stage, and read from the llm call log).
    """
    import time

    from sqlmend import llm

    from sqlmend.evaluation.compare import compare
    from sqlmend.evaluation.evaluate import evaluate
    from sqlmend.data.datasets import Dataset, load_dataset
    from sqlmend.data.predictions import load_predictions
    from sqlmend.pipeline import PipelineConfig, correct_batch

    ds = load_dataset(dataset)
    preds = load_predictions(pred, ds)
    sp = split_for(ds, split_path, fraction, seed)
    opts = ABLATIONS[ablation]
    cfg = llm_config(model)
    if databases:
        keep = set(databases)
        sp = Split([q for q in sp.history if ds.task(q).db_id in keep], [q for q in sp.test if ds.task(q).db_id in keep],
                   sp.fraction, sp.seed)
    folder = store_root(f"bench-{pred.stem}-{ablation}-{model or 'nomodel'}")
    t0 = time.time()
    with llm.tagged(f"memory-bench-offline-{t0}"):
        built = build_all(ds, history_cases(ds, preds, sp, workers, progress), folder, cfg,
                          opts.get("decompose", True), fresh=True, progress=progress, on_error=on_error)
    offline_log = log_usage(t0, f"memory-bench-offline-{t0}") if cfg else {}
    if report_build is not None:
        report_build(built, folder)
    test_ids = [q for q in sp.test if ds.db_path(ds.task(q).db_id) is not None]
    tasks = [t for t in ds.with_sql(preds) if t.question_id in set(test_ids)]
    config = PipelineConfig(stages=["memory", "guard"], workers=2,
                            options={"memory": {"store": str(folder), "verify": opts.get("verify", True),
                                                "local": opts.get("local", True)}})
    t1 = time.time()
    corrections = correct_batch(tasks, config, progress=progress,
                                resolve=(cfg.resolve if cfg else lambda s: None), db_root=ds.db_root)
    online_log = log_usage(t1) if cfg else {}
    test = Dataset(ds.name, [ds.task(q) for q in test_ids], db_root=ds.db_root)
    before = evaluate(test, preds, workers=workers, label=pred.stem)
    after = evaluate(test, {c.question_id: c.sql for c in corrections}, workers=workers, label="memory")
    paired = compare(before, after)
    mem = [s for c in corrections for s in c.stages if s.stage == "memory"]
    hows = defaultdict(int)
    for s in mem:
        if s.verdict is not None and s.verdict.accepted:
            hows[s.detail.get("how", "?")] += 1
    n = len(tasks) or 1
    return {"pred": pred.name, "ablation": ablation, "model": model or "none", "items": built.items,
            "items_by_kind": dict(built.by_kind), "history_corrections": built.corrections,
            "rejected": dict(built.rejected), "test": len(tasks),
            "fixed": len(paired.all.fixed), "regressed": len(paired.all.regressed),
            "changed": len(paired.all.changed), "before_ex": round(paired.all.before_ex, 2),
            "after_ex": round(paired.all.after_ex, 2), "delta_ex": round(paired.all.delta_ex, 2),
            "accepted_by": dict(hows),
            "offline": {"chat": built.usage.chat, "embed": built.usage.embed,
                        "tokens_in": built.usage.tokens_in, "tokens_out": built.usage.tokens_out},
            "online_per_query": {"calls": round(sum(s.calls for s in mem) / n, 3),
                                 "tokens_in": round(sum(s.tokens_in for s in mem) / n, 1),
                                 "tokens_out": round(sum(s.tokens_out for s in mem) / n, 1)},
            "call_log": {"offline": offline_log, "online": online_log,
                         "online_calls_per_query": round(online_log.get("calls", 0) / n, 3),
                         "online_tokens_per_query": round((online_log.get("tokens_in", 0) +
                                                           online_log.get("tokens_out", 0)) / n, 1)},
            "databases": sorted({ds.task(q).db_id for q in test_ids}),
            "fixed_ids": paired.all.fixed, "regressed_ids": paired.all.regressed}
