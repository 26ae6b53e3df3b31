"""``sqlmend bench detect``: the error-token detector against execution correctness (ErrorLLM §4.3).

Each prediction of the chosen questions is labelled wrong or right by execution
against the gold; the detector's verdicts (and the static rules', and the two
together) are scored with D-Precision/Recall/Accuracy/F1
(:func:`sqlmend.evaluation.metrics.detection_metrics`), over all questions and the
gold-clean ones (:mod:`sqlmend.evaluation.suspects`), with the AUROC of
1 - P(no_error) and the model's figures per system.

Also the runner of ``sqlmend train-combiner`` (:func:`train_combiner`): the scored
Spider-TRAIN cases the combination of :mod:`sqlmend.detect.combine` is fitted on.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Callable


def bench_detect(detector: Any, files: list[Path], limit: int | None = None, seed: int = 0,
                 static: bool = True, data_root: str | Path | None = None,
                 progress: bool = True, predictions: int | None = None, verifier: Any = None,
                 combiner: Any = None, prompted: Any = None, prompted_n: int | None = None,
                 search: Any = None, original: Any = None) -> dict[str, Any]:
    """Score detectors side by side on prediction files of Spider dev.

    Each detector runs in its own pass over the same predictions, so each has its own
    seconds per query: the error-token model (structure + forward passes), the static
    rules, the verifier alone (execution + rules + features), the prompted model.

    Args:
        detector: an :class:`~sqlmend.detect.detector.ErrorTokenDetector` (None: not run, nor the
            combinations that need it).
        files: the prediction files.
        limit: a seeded sample of this many dev questions
            (:func:`sqlmend.data.sampling.seeded_sample`; questions without a database
            are then left out); None: every question.
        seed: the sample's seed.
        static: also score the static rules and static-or-model.
        data_root: the folder holding ``spider/``.
        progress: show progress bars.
        predictions: a seeded sample of this many predictions among all those of the files
            (of the ``limit`` questions), instead of every one.
        verifier: a :class:`~sqlmend.search.verifier.FeatureVerifier`: score it as a detector
            (needs ``combiner`` for its threshold).
        combiner: a :class:`~sqlmend.detect.combine.Combiner` (thresholds fitted on Spider train):
            the verifier's threshold, static-or-verifier and each combination of
            :data:`~sqlmend.detect.combine.VARIANTS` whose signals were run.
        search: with ``verifier``, the bounds of the repair search run from each prediction
            (:func:`sqlmend.detect.combine.search_settings`) for the combinations' ``s_*``
            features, in its own timed pass (``seconds["search"]``: the verifier with the search;
            None: not run, nor the combinations that read it).
        original: an :class:`~sqlmend.detect.original.OriginalDetector` (the detection model trained on
            Spider train, its own threshold): scored alone (``original``) and or-ed with the static
            rules (``static+original``), in its own timed pass.
        prompted: a :class:`~sqlmend.detect.prompted.PromptedDetector`, run on a seeded
            ``prompted_n`` of the scored predictions (all when None).
        prompted_n: see ``prompted``.

    Returns:
        ``table`` (``"<detector> / <all|gold-clean|prompted-sample>"`` -> metrics), ``per_system``,
        ``auroc`` (per detector and subset), ``seconds`` (per query, per detector), ``kinds``
        (recall per judgeable error kind), ``questions``, ``suspects``, ``labels``, ``results``, ``wrong``.
    """
    import time

    from sqlmend.evaluation.evaluate import evaluate
    from sqlmend.evaluation.metrics import detection_metrics, labels_from_report
    from sqlmend.evaluation.suspects import gold_suspects
    from sqlmend.data.datasets import load_dataset
    from sqlmend.data.predictions import load_predictions
    from sqlmend.data.sampling import seeded_sample
    from sqlmend.detect.batch import Item, judge
    from sqlmend.detect.combine import VARIANTS
    from sqlmend.search.train import auroc

    ds = load_dataset("spider-dev", data_root=data_root)
    qids = [t.question_id for t in seeded_sample(ds.tasks, limit, seed) if ds.db_path(t.db_id)]
    items, by_file = [], {}
    for path in files:
        preds = by_file[path.stem] = load_predictions(path, ds)
        items += [Item(f"{path.stem}:{q}", q, ds.task(q).db_id, ds.task(q).question, preds[q])
                  for q in qids if q in preds]
    items = seeded_sample(items, predictions, seed)
    chosen = {it.key for it in items}
    qids = sorted({it.question_id for it in items}, key=qids.index)
    suspects = set(gold_suspects(ds, qids))
    labels: dict[str, bool] = {}
    for path in files:
        sub = {it.question_id: it.sql for it in items if it.key.startswith(path.stem + ":")}
        if not sub:
            continue
        report = evaluate(ds, sub, progress=False, label=path.stem)
        for qid, wrong in labels_from_report(report).items():
            if f"{path.stem}:{qid}" in chosen:
                labels[f"{path.stem}:{qid}"] = wrong
    items = [it for it in items if it.key in labels]
    n = len(items) or 1
    seconds: dict[str, float] = {}

    def timed(name: str, **kw: Any) -> dict[str, Any]:
        start = time.perf_counter()
        out = {j.key: j for j in judge(items, lambda d: ds.db_path(d), progress=progress, **kw)}
        seconds[name] = round((time.perf_counter() - start) / n, 4)
        return out

    results = timed("model", detector=detector) if detector is not None else \
        {j.key: j for j in judge(items, lambda d: ds.db_path(d), progress=False)}
    if static:
        for k, j in timed("static", static=True).items():
            results[k].static_codes, results[k].static_types = j.static_codes, j.static_types
    if verifier is not None:
        for k, j in timed("verifier", verifier=verifier).items():
            results[k].p_correct = j.p_correct
        if search is not None:
            for k, j in timed("search", verifier=verifier, search=search).items():
                results[k].best_correct, results[k].candidates = j.best_correct, j.candidates
                results[k].search_seconds = j.search_seconds
    if original is not None:
        for k, j in timed("original", verifier=original.verifier).items():
            results[k].p_original = j.p_correct
    # what each combination costs: its parts (the verifier's pass runs the rules it reads)
    use_model = detector is not None
    if use_model:
        seconds["static+model"] = round(seconds["model"] + seconds.get("static", 0.0), 4)
    if verifier is not None:
        seconds["static+verifier"] = seconds["verifier"]
    model = {k: [t for t, _ in j.model_types] for k, j in results.items()}
    flags: dict[str, dict[str, Any]] = {"model": model} if use_model else {}
    scores: dict[str, dict[str, float]] = {
        "model": {k: 1 - j.p_no_error for k, j in results.items() if j.p_no_error is not None}} if use_model else {}
    if static:
        flags["static"] = {k: j.static_types for k, j in results.items()}
        if use_model:
            flags["static+model"] = {k: j.static_types + model[k] for k, j in results.items()}
        scores["static"] = {k: float(len(j.static_types)) for k, j in results.items()}
    if verifier is not None and combiner is not None:
        from sqlmend.detect.combine import Combiner

        flags["verifier"] = {k: combiner.verifier_flags(j.p_correct) for k, j in results.items()}
        scores["verifier"] = {k: 1 - j.p_correct for k, j in results.items() if j.p_correct is not None}
        if static:
            flags["static+verifier"] = {k: bool(j.static_types) or flags["verifier"][k] for k, j in results.items()}
            rows = {k: row_of(j) for k, j in results.items()}
            for name in VARIANTS:
                comb = Combiner(combiner.spec, name)
                if (comb.uses_detector and not use_model) or (comb.uses_search and search is None):
                    continue
                flags[name] = {k: comb.flags(r) for k, r in rows.items()}
                scores[name] = {k: comb.score(r) for k, r in rows.items()}
                seconds[name] = round(seconds["search" if comb.uses_search else "verifier"]
                                      + (seconds["model"] if comb.uses_detector else 0.0), 4)
    if original is not None:
        flags["original"] = {k: original.flags(j.p_original) for k, j in results.items()}
        scores["original"] = {k: 1 - j.p_original for k, j in results.items() if j.p_original is not None}
        if static:
            flags["static+original"] = {k: bool(j.static_types) or flags["original"][k] for k, j in results.items()}
            seconds["static+original"] = seconds["original"]
    clean = {k: v for k, v in labels.items() if k.split(":", 1)[1] not in suspects}
    subsets = {"all": labels, "gold-clean": clean}
    if prompted is not None:
        sample = seeded_sample(items, prompted_n, seed)
        start = time.perf_counter()
        said = {j.key: j for j in judge(sample, lambda d: ds.db_path(d), prompted, progress=progress, batch_size=1)}
        seconds["prompted"] = round((time.perf_counter() - start) / (len(sample) or 1), 4)
        flags["prompted"] = {k: [t for t, _ in j.model_types] for k, j in said.items()}
        scores["prompted"] = {k: float(bool(v)) for k, v in flags["prompted"].items()}
        subsets["prompted-sample"] = {k: labels[k] for k in said}
        results.update({f"prompted:{k}": j for k, j in said.items()})
    table = {}
    for name, f in flags.items():
        for subset, truth in subsets.items():
            if name == "prompted" and subset != "prompted-sample":
                continue
            m = detection_metrics({k: v for k, v in f.items() if k in truth}, truth).overall
            table[f"{name} / {subset}"] = m.to_dict()
    auc: dict[str, dict[str, float | None]] = {}
    for name, sc in scores.items():
        for subset, truth in subsets.items():
            keys = [k for k in truth if k in sc]
            if keys and (name != "prompted" or subset == "prompted-sample"):
                auc.setdefault(name, {})[subset] = auroc([1 - sc[k] for k in keys], [truth[k] for k in keys])
    per_system = {}
    for path in files:
        truth = {k: v for k, v in labels.items() if k.startswith(path.stem + ":")}
        per_system[path.stem] = {name: detection_metrics({k: flags[name][k] for k in truth}, truth).overall.to_dict()
                                 for name in ("model", "verifier", "original", *VARIANTS) if name in flags}
    kinds = _kind_recall(ds, items, labels, flags)
    return {"table": table, "per_system": per_system, "auroc": auc, "seconds": seconds, "kinds": kinds,
            "questions": len(qids), "predictions": len(labels), "suspects": sorted(suspects), "labels": labels,
            "wrong": sum(labels.values()), "results": {k: j.to_dict() for k, j in results.items()}}


def _kind_recall(ds: Any, items: list, labels: dict[str, bool], flags: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per judgeable error kind of the wrong predictions: how many, and the share each detector flags."""
    from sqlmend.bench.errorkind import KINDS, error_kind

    kind_of: dict[str, str | None] = {}
    with ds.databases() as open_db:
        for it in items:
            if labels.get(it.key):
                kind_of[it.key] = error_kind(it.sql, ds.task(it.question_id).gold, open_db(it.db_id).schema())
    out: dict[str, Any] = {}
    for kind in (*KINDS, None):
        keys = [k for k, v in kind_of.items() if v == kind]
        row: dict[str, Any] = {"n": len(keys)}
        for name, f in flags.items():
            judged = [k for k in keys if k in f]
            if judged:
                row[name] = round(100 * sum(bool(f[k]) for k in judged) / len(judged), 2)
        out[kind or "not judgeable"] = row
    return out


def detect_file(detector: Any, dataset: str, pred: Path, out: Path, *, limit: int | None = None,
                sample: int | None = None, seed: int = 0, data_root: str | Path | None = None,
                db_root: str | Path | None = None, progress: bool = True, batch_size: int = 8) -> dict[str, Any]:
    """``sqlmend detect --dataset --pred --out``: judge every chosen prediction, write ``detections.jsonl``.

    One line per prediction, in dataset order: ``question_id``, ``db_id``, ``error``
    (flagged by the detector's calibrated threshold), ``types`` (the error types, most
    likely first), ``score`` (P(error) = 1 - P(no_error)) and ``failure`` (why it could
    not be judged, else null). ``run.json`` records the detector and the selection.

    With the detection model (an :class:`~sqlmend.detect.original.OriginalDetector`, ``detect
    --kind features``), ``score`` is 1 - its P(correct), ``error`` its threshold's flag, and
    ``types`` the error types of the static rules' findings (the model names none).

    Args:
        detector: an :class:`~sqlmend.detect.detector.ErrorTokenDetector`, or an
            :class:`~sqlmend.detect.original.OriginalDetector`.
        dataset: a dataset name or task file.
        pred: the prediction file.
        out: the output folder.
        limit: the first N predictions.
        sample: a seeded sample of N (:func:`sqlmend.data.sampling.choose`; wins over ``limit``).
        seed: the sample's seed.
        data_root: the folder holding ``spider/``.
        db_root: the databases folder ``<db_id>/<db_id>.sqlite`` (wins over the dataset's).
        progress: show a progress bar.
        batch_size: queries per forward pass.

    Returns:
        ``{"n", "flagged", "failed", "out"}``.
    """
    import json

    from sqlmend.data.datasets import load_dataset, write_jsonl
    from sqlmend.data.predictions import load_predictions
    from sqlmend.data.sampling import choose
    from sqlmend.detect.batch import Item, judge

    ds = load_dataset(dataset, data_root=data_root, db_root=db_root)
    chosen = choose(ds.with_sql(load_predictions(pred, ds)), limit, sample, seed)
    items = [Item(t.question_id, t.question_id, t.db_id, t.question, t.sql or "", t.evidence) for t in chosen]

    def path_of(db_id: str) -> str:
        return str(ds.db_path(db_id) or f"<missing database {db_id}>")

    trees = getattr(detector, "verifier", None)  # the detection model: trees over the verifier's features
    if trees is not None:
        judged = judge(items, path_of, None, static=True, verifier=trees, progress=progress)
        rows = [{"question_id": it.question_id, "db_id": it.db_id, "error": detector.flags(j.p_correct),
                 "types": j.static_types,
                 "score": None if j.p_correct is None else round(1 - j.p_correct, 4), "failure": j.error}
                for it, j in zip(items, judged)]
    else:
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
        "detector": str(getattr(detector, "folder", "") or getattr(detector, "path", "")),
        "version": getattr(detector, "version", ""),
        "threshold": getattr(detector, "threshold", None), "n": len(rows)}, indent=1))
    return {"n": len(rows), "flagged": sum(r["error"] for r in rows),
            "failed": sum(r["failure"] is not None for r in rows), "out": str(out)}


def unseen_train_tasks(ds: Any, selection: dict[str, Any] | None, synth_limit: int = 2500,
                       synth_seed: int = 0) -> list:
    """Spider-train questions neither shipped model trained on.

    The verifier's questions are redone from the ``selection`` its weights record
    (:func:`sqlmend.search.train.seen_questions`; None: a verifier that records none is taken
    to have seen every question); the detector's from the ``sqlmend synth --limit synth_limit``
    sample (:func:`sqlmend.synth.build.sample_questions`).
    """
    from sqlmend.search.train import seen_questions
    from sqlmend.synth.build import sample_questions

    def has_db(db_id: str) -> bool:
        return ds.db_path(db_id) is not None

    with_db = [t for t in ds.tasks if has_db(t.db_id) and t.gold]
    if selection is None:
        return []
    used = seen_questions(ds.tasks, has_db, selection)
    used |= {t.question_id for t in sample_questions(ds.tasks, synth_limit, synth_seed)}
    return [t for t in with_db if t.question_id not in used]


def combiner_cases(ds: Any, detector: Any, verifier: Any, questions: int = 250, seed: int = 0, near: int = 1,
                   progress: bool = True, skipped: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """The scored cases of ``sqlmend train-combiner``: :func:`sqlmend.search.hard.cases` of a seeded sample
    of ``questions`` :func:`unseen_train_tasks`, each with ``p_no_error``, ``p_correct``,
    the repair search's ``best_correct``, ``candidates`` and ``search_seconds`` (the search stage's
    bounds, :func:`sqlmend.detect.combine.search_settings`), ``static_types`` and ``failure`` (why it
    could not be judged, else None).

    Raises:
        ConfigError: no training question is left that neither model trained on.
    """
    from sqlmend.data.sampling import seeded_sample
    from sqlmend.detect.batch import Item, judge
    from sqlmend.detect.combine import search_settings
    from sqlmend.errors import ConfigError, SqlmendError
    from sqlmend.progress import bar as progress_bar
    from sqlmend.search.hard import cases

    unseen = unseen_train_tasks(ds, getattr(verifier, "spec", {}).get("training", {}).get("selection"))
    if not unseen:
        raise ConfigError("no Spider-train question is left that neither the detector nor the verifier "
                          "trained on")
    rows: list[dict[str, Any]] = []
    with ds.databases() as open_db:
        for t in progress_bar(seeded_sample(unseen, questions, seed), desc="cases", unit="question",
                              disable=not progress):
            try:
                rows += cases(t, open_db(t.db_id), random.Random(f"{seed}:{t.question_id}"), near=near)
            except SqlmendError as e:
                skipped(f"{t.question_id}: skipped ({e})")
    items = [Item(str(i), r["qid"], r["db_id"], r["question"], r["sql"], r.get("evidence") or "")
             for i, r in enumerate(rows)]
    for r, j in zip(rows, judge(items, lambda d: ds.db_path(d), detector, static=True, progress=progress,
                                verifier=verifier, search=search_settings())):
        r.update(p_no_error=j.p_no_error, p_correct=j.p_correct, best_correct=j.best_correct,
                 candidates=j.candidates, search_seconds=j.search_seconds, static_types=j.static_types,
                 failure=j.error)
    return rows


def row_of(j: Any) -> list[float]:
    """The combination's :func:`~sqlmend.detect.combine.feature_row` of a judgement (or of its dict)."""
    from sqlmend.detect.combine import feature_row

    d = j if isinstance(j, dict) else j.__dict__
    return feature_row(d.get("p_no_error"), d.get("p_correct"), d.get("static_types") or [],
                       d.get("best_correct"), d.get("candidates"))


def fit_combiner(rows: list[dict[str, Any]], verifier_weights: str | Path, seed: int = 0,
                 command: str = "") -> dict[str, Any]:
    """The combination spec (:func:`sqlmend.detect.combine.fit`) of the judged :func:`combiner_cases`,
    with its provenance (date, dataset, verifier fingerprint, case kinds, ``command``)."""
    import datetime as _dt

    from sqlmend.detect import combine
    from sqlmend.errors import ConfigError

    rows = [r for r in rows if not r.get("failure")]
    if rows and "candidates" not in rows[0]:
        raise ConfigError("the cases were scored before the repair-search features; delete the cases file "
                          "and rerun `sqlmend train-combiner`")
    spec = combine.fit([row_of(r) for r in rows], [not r["correct"] for r in rows], [r["qid"] for r in rows],
                       seed=seed)
    spec["training"].update({"date": _dt.date.today().isoformat(), "dataset": "spider-train",
                             "verifier": combine.fingerprint(verifier_weights),
                             "kinds": {k: sum(r["kind"].split(":")[0] == k for r in rows)
                                       for k in ("gold", "rule", "near")},
                             "command": command})
    return spec
