"""``sqlmend bench detect``: the error-token detector against execution correctness (ErrorLLM §4.3).

Each prediction of the chosen questions is labelled wrong or right by execution
against the gold; the detector's verdicts (and the static rules', and the two
together) are scored with D-Precision/Recall/Accuracy/F1
(:func:`sqlmend.bench.metrics.detection_metrics`), over all questions and the
gold-clean ones (:mod:`sqlmend.bench.suspects`), with the AUROC of
1 - P(no_error) and the model's figures per system.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def bench_detect(detector: Any, files: list[Path], limit: int | None = None, seed: int = 0,
                 static: bool = True, data_root: str | Path | None = None,
                 progress: bool = True) -> dict[str, Any]:
    """Score a detector on prediction files of Spider dev.

    Args:
        detector: an :class:`~sqlmend.detect.detector.ErrorTokenDetector`.
        files: the prediction files.
        limit: a seeded sample of this many dev questions
            (:func:`sqlmend.bench.sampling.seeded_sample`; questions without a database
            are then left out); None: every question.
        seed: the sample's seed.
        static: also score the static rules and static-then-model.
        data_root: the folder holding ``spider/``.
        progress: show progress bars.

    Returns:
        ``table`` (``"<detector> / <all|gold-clean>"`` -> metrics), ``per_system``, ``auroc``,
        ``questions``, ``suspects``, ``labels``, ``results`` (per prediction), ``wrong``.
    """
    from sqlmend.bench.datasets import load_dataset
    from sqlmend.bench.evaluate import evaluate
    from sqlmend.bench.metrics import detection_metrics, labels_from_report
    from sqlmend.bench.predictions import load_predictions
    from sqlmend.bench.sampling import seeded_sample
    from sqlmend.bench.suspects import gold_suspects
    from sqlmend.detect.batch import Item, judge
    from sqlmend.detect.calibrate import auroc

    ds = load_dataset("spider-dev", data_root=data_root)
    qids = [t.question_id for t in seeded_sample(ds.tasks, limit, seed) if ds.db_path(t.db_id)]
    suspects = set(gold_suspects(ds, qids))
    items, labels = [], {}
    for path in files:
        preds = load_predictions(path, ds)
        sub = {q: preds[q] for q in qids if q in preds}
        report = evaluate(ds, sub, progress=False, label=path.stem)
        for qid, wrong in labels_from_report(report).items():
            if qid in sub:  # the report also judges the questions left out of the sample
                labels[f"{path.stem}:{qid}"] = wrong
        items += [Item(f"{path.stem}:{q}", q, ds.task(q).db_id, ds.task(q).question, sql) for q, sql in sub.items()]
    items = [it for it in items if it.key in labels]
    results = {j.key: j for j in judge(items, lambda d: ds.db_path(d), detector, static=static, progress=progress)}
    flags = {
        "model": {k: [t for t, _ in j.model_types] for k, j in results.items()},
        "static": {k: j.static_types for k, j in results.items()},
        "static+model": {k: j.static_types + [t for t, _ in j.model_types] for k, j in results.items()},
    }
    if not static:
        flags = {"model": flags["model"]}
    clean = {k: v for k, v in labels.items() if k.split(":", 1)[1] not in suspects}
    table = {}
    for name, f in flags.items():
        for subset, truth in (("all", labels), ("gold-clean", clean)):
            m = detection_metrics({k: v for k, v in f.items() if k in truth}, truth).overall
            table[f"{name} / {subset}"] = m.to_dict()
    per_system = {}
    for path in files:
        truth = {k: v for k, v in labels.items() if k.startswith(path.stem + ":")}
        per_system[path.stem] = detection_metrics({k: flags["model"][k] for k in truth}, truth).overall.to_dict()
    auc = {}
    for subset, truth in (("all", labels), ("gold-clean", clean)):
        keys = [k for k in truth if results[k].p_no_error is not None]
        auc[subset] = auroc([results[k].p_no_error for k in keys], [truth[k] for k in keys])
    return {"table": table, "per_system": per_system, "auroc": auc, "questions": len(qids),
            "suspects": sorted(suspects), "labels": labels, "wrong": sum(labels.values()),
            "results": {k: j.to_dict() for k, j in results.items()}}


def detect_file(detector: Any, dataset: str, pred: Path, out: Path, *, limit: int | None = None,
                sample: int | None = None, seed: int = 0, data_root: str | Path | None = None,
                db_root: str | Path | None = None, progress: bool = True, batch_size: int = 8) -> dict[str, Any]:
    """``sqlmend detect --dataset --pred --out``: judge every chosen prediction, write ``detections.jsonl``.

    One line per prediction, in dataset order: ``question_id``, ``db_id``, ``error``
    (flagged by the detector's calibrated threshold), ``types`` (the error types, most
    likely first), ``score`` (P(error) = 1 - P(no_error)) and ``failure`` (why it could
    not be judged, else null). ``run.json`` records the detector and the selection.

    Args:
        detector: an :class:`~sqlmend.detect.detector.ErrorTokenDetector`.
        dataset: a dataset name or task file.
        pred: the prediction file.
        out: the output folder.
        limit: the first N predictions.
        sample: a seeded sample of N (:func:`sqlmend.bench.sampling.choose`; wins over ``limit``).
        seed: the sample's seed.
        data_root: the folder holding ``spider/``.
        db_root: the databases folder ``<db_id>/<db_id>.sqlite`` (wins over the dataset's).
        progress: show a progress bar.
        batch_size: queries per forward pass.

    Returns:
        ``{"n", "flagged", "failed", "out"}``.
    """
    import json

    from sqlmend.bench.datasets import load_dataset, write_jsonl
    from sqlmend.bench.predictions import load_predictions
    from sqlmend.bench.sampling import choose
    from sqlmend.detect.batch import Item, judge

    ds = load_dataset(dataset, data_root=data_root, db_root=db_root)
    chosen = choose(ds.with_sql(load_predictions(pred, ds)), limit, sample, seed)
    items = [Item(t.question_id, t.question_id, t.db_id, t.question, t.sql or "", t.evidence) for t in chosen]

    def path_of(db_id: str) -> str:
        return str(ds.db_path(db_id) or f"<missing database {db_id}>")

    judged = judge(items, path_of, detector, progress=progress, batch_size=batch_size)
    rows = [{"question_id": it.question_id, "db_id": it.db_id, "error": bool(j.model_types),
             "types": [t for t, _ in j.model_types],
             "score": None if j.p_no_error is None else round(1 - j.p_no_error, 4), "failure": j.error}
            for it, j in zip(items, judged)]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "detections.jsonl", rows)
    (out / "run.json").write_text(json.dumps({
        "dataset": dataset, "pred": str(pred), "selection": {"limit": limit, "sample": sample, "seed": seed},
        "detector": str(getattr(detector, "folder", "")), "version": getattr(detector, "version", ""),
        "threshold": getattr(detector, "threshold", None), "n": len(rows)}, indent=1))
    return {"n": len(rows), "flagged": sum(r["error"] for r in rows),
            "failed": sum(r["failure"] is not None for r in rows), "out": str(out)}
