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
