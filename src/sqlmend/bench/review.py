"""``sqlmend bench review``: the gold as a scripted reviewer, compared with ``sqlmend memory build``.

On MIRA's history split (§4.1) of one prediction file: correct the history part
(a run folder), let the gold decide every item through ``reviews.jsonl``
(:func:`sqlmend.review.scripted.gold_decisions`), build memory from those
decisions with the review page's code (:func:`sqlmend.review.confirm.build`), build
memory from the same split with ``sqlmend memory build``'s code
(:func:`sqlmend.bench.memory.build_all`), and compare the two item sets.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from sqlmend.data.split import Split, split_tasks


def bench_review(pred: Path, dataset: str, out: Path, fraction: float = 0.25, seed: int = 0,
                 stages: list[str] | None = None, workers: int = 2, accept_matching: bool = False,
                 databases: list[str] | None = None, progress: bool = True) -> dict[str, Any]:
    """Run the scripted gold review and the memory build on one split; compare their items.

    Args:
        pred: the prediction file.
        dataset: the dataset name.
        out: the work folder (emptied): ``run/`` (the reviewed run), ``store-review/``,
            ``store-build/``.
        fraction: history share per database.
        seed: split seed.
        stages: the correction run's stages (default static + guard).
        workers: evaluation worker processes.
        accept_matching: the gold accepts a correction whose result matches its own
            (default: every wrong original is edited to the gold, as the memory build does).
        databases: only these databases' history (None: all).
        progress: show progress bars.

    Returns:
        The JSON-able result: decisions, confirmations, item counts, whether the item
        sets are identical, the items found by one side only, and the items.
    """
    from sqlmend.batch import run_file
    from sqlmend.evaluation.evaluate import evaluate_run
    from sqlmend.bench.memory import build_all, history_cases
    from sqlmend.data.datasets import load_dataset
    from sqlmend.data.predictions import load_predictions, sniff_pred_format
    from sqlmend.pipeline import PipelineConfig
    from sqlmend.review import confirm
    from sqlmend.review.decisions import ReviewLog
    from sqlmend.review.run import Run
    from sqlmend.review.scripted import gold_decisions, store_items

    ds = load_dataset(dataset)
    preds = load_predictions(pred, ds)
    full = split_tasks(ds.tasks, fraction=fraction, seed=seed)
    keep = set(databases) if databases else None
    history = [q for q in full.history if keep is None or ds.task(q).db_id in keep]
    split = Split(history=history, test=[], fraction=fraction, seed=seed)
    wanted = set(history)
    tasks = [t for t in ds.with_sql(preds) if t.question_id in wanted and ds.db_path(t.db_id)]
    shutil.rmtree(out, ignore_errors=True)
    run_dir = out / "run"
    config = PipelineConfig(stages=stages or ["static", "guard"], workers=2)
    run_file(ds, preds, tasks, config, run_dir, sniff_pred_format(pred), progress=progress,
             manifest={"dataset": dataset, "pred": str(Path(pred).resolve()),
                       "selection": {"split": "history", "fraction": fraction, "seed": seed,
                                     "databases": sorted(keep) if keep else None}})
    run = Run.load(run_dir)
    evaluate_run(run, workers=workers)
    log = ReviewLog(run_dir)
    counts = gold_decisions(run, log, accept_matching=accept_matching)
    confirmed, skipped = confirm.confirmations(run, log.latest())
    outcomes = confirm.build(run, confirmed, out / "store-review", withdrawn=skipped)
    confirm.record(run_dir, outcomes, out / "store-review", "gold")
    built = build_all(ds, history_cases(ds, preds, split, workers, progress), out / "store-build", fresh=True,
                      progress=progress)
    with ds.databases() as conn:
        effort = review_effort(run, conn)
    by_review, by_build = store_items(out / "store-review"), store_items(out / "store-build")
    return {"pred": Path(pred).name, "history_tasks": len(tasks), "decisions": counts,
            "confirmed": len(confirmed), "memory_build_corrections": built.corrections,
            "items_review": len(by_review), "items_memory_build": len(by_build),
            "identical": by_review == by_build,
            "only_review": sorted(set(by_review) - set(by_build)),
            "only_memory_build": sorted(set(by_build) - set(by_review)), "effort": effort,
            "items": by_review}


def review_effort(run: Any, conn: Any, first: int = 100, below: float | None = None) -> dict[str, Any]:
    """How many wrong predictions a reviewer meets in the first ``first`` items: in dataset order, and
    ordered by P(error) (1 - the shipped verifier's P(correct) of the original, the query alone).

    Args:
        run: the evaluated :class:`~sqlmend.review.run.Run` (items with their ``before`` verdict).
        conn: ``db_id -> open database``.
        first: the items a reviewer reads.
        below: a P(correct) threshold (the system's ``suspect_below`` when it has an adaptation,
            else the shipped one): the items over the matching P(error) are also counted.

    Returns:
        ``{"items", "wrong", "first", "wrong_first_dataset_order", "wrong_first_p_error_order",
        "threshold", "flagged", "wrong_flagged"}``.
    """
    from sqlmend.review.run import p_errors
    from sqlmend.search.verifier import FeatureVerifier

    below = FeatureVerifier().suspect_below if below is None else below
    risk = p_errors(run, conn)
    scored = [(risk[it.qid], it.before != "correct") for it in run.items  # dataset order
              if it.qid in risk and it.before is not None and it.before != "gold_error"]
    ranked = sorted(scored, key=lambda x: -x[0])  # stable: ties keep dataset order
    flagged = [w for p, w in scored if p > 1.0 - below]
    return {"items": len(scored), "wrong": sum(w for _, w in scored), "first": first,
            "wrong_first_dataset_order": sum(w for _, w in scored[:first]),
            "wrong_first_p_error_order": sum(w for _, w in ranked[:first]),
            "threshold": round(1.0 - below, 4), "flagged": len(flagged), "wrong_flagged": sum(flagged)}
