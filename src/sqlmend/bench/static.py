"""``sqlmend bench static``: the static stage alone on prediction files, and its detection figures.

For each prediction file the static stage runs on every question (strict fixes
applied, guarded); the corrected file is evaluated against the gold beside the
original (the paired report: fixed / regressed / ΔEX, all and gold-clean), and
each rule's findings are scored against execution correctness: detection
precision and recall per rule, over all scored predictions and over the
gold-clean ones (:mod:`sqlmend.evaluation.suspects`), with the stage's latency.
A fixing rule also gets its *act precision*: a flag on a correct prediction
counts against it only when the rule's own fix turns that prediction wrong
(the first law is about what a fix does; a flag whose fix keeps the answer
loses nothing). Strictness reads it (:func:`sqlmend.rules.severity_reason`).

The measured precision is data: :func:`precision_record` turns a report into
the file :func:`sqlmend.rules.measured` reads (see ``rules/__init__.py`` for
where it is looked up); this module never writes into the package.
"""

from __future__ import annotations

import datetime as _dt
import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Iterator

from sqlmend.evaluation.metrics import Confusion
from sqlmend.progress import bar as progress_bar
from sqlmend.types import StageTrace, Task


@dataclass
class Judged:
    """One scored prediction: what the rules found and whether it is correct by execution."""

    question_id: str
    system: str
    codes: set[str]  # codes of its findings
    strict_codes: set[str]  # codes of its strict findings
    correct: bool
    suspect: bool  # the gold of its question triggers a rule
    kept: frozenset[str] = frozenset()  # codes whose own fix keeps this correct prediction correct


def _counts(items: list[Judged], hit, code: str | None = None) -> dict[str, Any]:
    """Detection counts of one rule (or the catalogue): the positive class is "incorrect".

    With ``code``, ``kept`` counts the flagged correct predictions that rule's own
    fix keeps correct, and ``act_precision`` is ``(true_pos + kept) / flagged``.
    """
    c = Confusion()
    false_pos: list[str] = []
    kept = 0
    for j in items:
        c.add(bool(hit(j)), not j.correct)
        if hit(j) and j.correct:
            false_pos.append(f"{j.system}:{j.question_id}")
            kept += code is not None and code in j.kept
    flagged = c.tp + c.fp
    out = {"flagged": flagged, "true_pos": c.tp, "wrong": c.tp + c.fn,
           "precision": round(c.precision, 4) if flagged else None,
           "recall": round(c.recall, 4), "false_positives": false_pos[:20]}
    if code is not None:
        out.update(kept=kept, act_precision=round((c.tp + kept) / flagged, 4) if flagged else None)
    return out


def detection(judged: Iterable[Judged], codes: list[str]) -> dict[str, Any]:
    """Per-rule and overall detection figures, over all predictions and the gold-clean ones.

    Args:
        judged: the scored predictions.
        codes: the rule codes to report.

    Returns:
        ``{"rules": {code: {"all": counts, "clean": counts}}, "any": ..., "strict": ...}``;
        counts are ``flagged``, ``true_pos``, ``wrong``, ``precision`` (None when nothing
        was flagged), ``recall`` and the first 20 ``false_positives``; a rule's also
        ``kept`` and ``act_precision`` (see :func:`_counts`).
    """
    items = list(judged)
    clean = [j for j in items if not j.suspect]
    out: dict[str, Any] = {"rules": {}}
    for code in codes:
        out["rules"][code] = {"all": _counts(items, lambda j, c=code: c in j.codes, code),
                              "clean": _counts(clean, lambda j, c=code: c in j.codes, code)}
    for name, hit in (("any", lambda j: bool(j.codes)), ("strict", lambda j: bool(j.strict_codes))):
        out[name] = {"all": _counts(items, hit), "clean": _counts(clean, hit)}
    return out


def latency(seconds: list[float]) -> dict[str, float]:
    """Median and 95th percentile, in milliseconds.

    Args:
        seconds: per-query durations.

    Returns:
        ``{"median_ms", "p95_ms", "n"}``.
    """
    if not seconds:
        return {"median_ms": 0.0, "p95_ms": 0.0, "n": 0}
    ms = sorted(s * 1000 for s in seconds)
    p95 = ms[min(len(ms) - 1, int(round(0.95 * (len(ms) - 1))))]
    return {"median_ms": round(statistics.median(ms), 2), "p95_ms": round(p95, 2), "n": len(ms)}


def static_trace(db: Any, task: Task, timeout: float) -> StageTrace:
    """Run the static stage alone on one task (its ``sql``) against an open database."""
    from sqlmend.rules.stage import StaticStage
    from sqlmend.stage import RunSettings, StageContext

    run = RunSettings(timeout=timeout)
    return StaticStage(run=run).run(StageContext(task=task, db=db, sql=task.sql, run=run))


def check_file(ds: Any, preds: dict[str, str], timeout: float,
               progress: bool = False) -> Iterator[dict[str, Any]]:
    """The static stage on every task of a prediction file, one record per task (``sqlmend check``).

    Args:
        ds: the dataset.
        preds: ``{question_id: sql}`` (tasks without a prediction are checked with ``""``).
        timeout: seconds each query and probe may run.
        progress: show a progress bar.

    Yields:
        ``{"question_id", "db_id", "findings": [...], "sql"}`` or ``{..., "error"}`` per task;
        a per-item error never stops the batch.
    """
    from sqlmend.db import connect
    from sqlmend.errors import SqlmendError
    from sqlmend.pipeline import take_sql_out

    for task in progress_bar(ds.tasks, desc="check", disable=not progress):
        task = Task(**{**task.to_dict(), "sql": preds.get(task.question_id, "")})
        path = ds.db_path(task.db_id)
        record: dict[str, Any] = {"question_id": task.question_id, "db_id": task.db_id}
        try:
            if path is None:
                raise SqlmendError(f"database {task.db_id} not found")
            with connect(str(path)) as conn:
                intake, query = take_sql_out(task, conn)  # a model's raw answer: as Pipeline.correct does
                trace = static_trace(conn, query, timeout)
            found = (intake.findings if intake is not None else []) + trace.findings
            record.update(findings=[f.to_dict() for f in found],
                          sql=trace.verdict.sql if trace.verdict else query.sql)
        except SqlmendError as exc:
            record["error"] = str(exc)
        yield record


@dataclass
class StaticBench:
    """The result of :func:`bench_static`: the JSON report and the paired reports to print."""

    report: dict[str, Any]
    paired: list[Any]  # PairedReport per prediction file, in --pred order


def bench_static(pred: list[Path], dataset: str = "spider-dev", timeout: float = 10.0,
                 limit: int = 0, progress: bool = True) -> StaticBench:
    """Correct prediction files with only the static stage and score it.

    Args:
        pred: prediction files.
        dataset: dataset name or task file.
        timeout: seconds each query and probe may run.
        limit: only the first N questions (0: all); only they are evaluated.
        progress: show progress bars.

    Returns:
        The report (``date``, ``dataset``, ``files``, ``detection``, ``latency``,
        ``paired``, ``gold_suspect``) and the paired reports.
    """
    from sqlmend import rules
    from sqlmend.evaluation.compare import compare
    from sqlmend.evaluation.evaluate import evaluate
    from sqlmend.evaluation.suspects import gold_suspects
    from sqlmend.data.datasets import load_dataset
    from sqlmend.data.predictions import load_predictions

    full = load_dataset(dataset)
    # with --limit, evaluate a smaller dataset (not the whole one with predictions missing)
    ds = replace(full, tasks=full.tasks[:limit]) if limit else full
    tasks = ds.tasks
    judged: list[Judged] = []
    seconds: list[float] = []
    paired: dict[str, Any] = {}
    reports = []
    with ds.databases() as db_for:
        suspects = gold_suspects(ds, timeout=timeout, connect_db=db_for, progress=progress)
        for path in pred:
            preds = load_predictions(path, full)
            corrected = dict(preds)
            findings: dict[str, list] = {}
            for task in progress_bar(tasks, desc=f"static {path.stem}", disable=not progress):
                conn = db_for(task.db_id)
                if conn is None:
                    continue
                t = Task(**{**task.to_dict(), "sql": preds.get(task.question_id, "")})
                start = time.perf_counter()
                trace = static_trace(conn, t, timeout)
                seconds.append(time.perf_counter() - start)
                findings[task.question_id] = trace.findings
                if trace.verdict is not None and trace.verdict.accepted:
                    corrected[task.question_id] = trace.verdict.sql
            sub = {t.question_id: preds.get(t.question_id, "") for t in tasks}
            before = evaluate(ds, sub, suspect_ids=suspects, label=path.stem)
            after = evaluate(ds, {q: corrected[q] for q in sub}, suspect_ids=suspects,
                             label=f"{path.stem}+static")
            report = compare(before, after, suspect_ids=suspects)
            paired[path.stem] = report.to_dict()
            reports.append(report)
            kept = fixes_kept(ds, before, sub, findings)
            for qid in sub:
                res = before.result(qid)
                if not res.scored:
                    continue
                fs = findings.get(qid, [])
                judged.append(Judged(qid, path.stem, {f.code for f in fs},
                                     {f.code for f in fs if f.severity == "strict"}, res.correct,
                                     qid in suspects, frozenset(kept.get(qid, ()))))
    det = detection(judged, [r.code for r in rules.all_rules()])
    return StaticBench(report={"date": _dt.date.today().isoformat(), "dataset": dataset,
                               "files": [p.name for p in pred], "detection": det,
                               "latency": latency(seconds), "paired": paired, "gold_suspect": suspects},
                       paired=reports)


def fixes_kept(ds: Any, before: Any, preds: dict[str, str], findings: dict[str, list]) -> dict[str, set[str]]:
    """For each correct prediction a rule flagged, the codes whose own fix keeps it correct.

    Each rule's fixes are applied alone (the one fix engine), and the rewrites are
    evaluated against the gold like the predictions were.

    Args:
        ds: the dataset evaluated.
        before: the predictions' evaluation report.
        preds: ``{question_id: sql}`` as evaluated.
        findings: the static stage's findings per question.

    Returns:
        ``{question_id: {code, ...}}``.
    """
    from sqlmend.evaluation.evaluate import evaluate
    from sqlmend.errors import SqlError
    from sqlmend.rules import engine

    by_code: dict[str, dict[str, str]] = {}
    for qid, fs in findings.items():
        if qid not in preds or not before.result(qid).scored or not before.result(qid).correct:
            continue
        for code in {f.code for f in fs if f.fixes}:
            try:
                by_code.setdefault(code, {})[qid] = engine.apply(
                    preds[qid], [fx for f in fs if f.code == code for fx in f.fixes])
            except SqlError:
                continue
    kept: dict[str, set[str]] = {}
    for code, rewrites in by_code.items():
        sub = replace(ds, tasks=[t for t in ds.tasks if t.question_id in rewrites])
        report = evaluate(sub, rewrites, label=f"{code} fixes")
        for qid in rewrites:
            if report.result(qid).correct:
                kept.setdefault(qid, set()).add(code)
    return kept


def default_precision_path() -> Path:
    """Where ``--write-precision`` writes by default: ``<cache>/rules/precision.json``."""
    from sqlmend.paths import cache_dir

    return cache_dir("rules") / "precision.json"


def precision_record(report: dict[str, Any], pred: list[Path]) -> dict[str, Any]:
    """The measured-precision file's content (what :func:`sqlmend.rules.measured` reads).

    Args:
        report: a :func:`bench_static` report.
        pred: the prediction files it measured (named in the record's command).
    """
    det = report["detection"]
    return {"date": report["date"], "dataset": report["dataset"], "files": report["files"],
            "command": "sqlmend bench static --write-precision " + " ".join(f"--pred {p}" for p in pred),
            "rules": {c: {"precision_clean": d["clean"]["precision"], "precision_all": d["all"]["precision"],
                          "act_precision_clean": d["clean"].get("act_precision"),
                          "act_precision_all": d["all"].get("act_precision"),
                          "flagged_clean": d["clean"]["flagged"], "flagged_all": d["all"]["flagged"]}
                      for c, d in det["rules"].items()}}


def detection_lines(report: dict[str, Any]) -> list[str]:
    """The detection table, the wrong-prediction counts, latency and suspects, as printed lines."""
    det, speed, suspects = report["detection"], report["latency"], report["gold_suspect"]

    def pct(v):
        return "-" if v is None else f"{100 * v:.1f}"

    lines = ["| rule | flagged (all) | precision % (all) | recall % (all) | flagged (clean) | "
             "precision % (clean) | recall % (clean) | act precision % (clean) |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, d in [*det["rules"].items(), ("any rule", det["any"]), ("strict rules", det["strict"])]:
        a, c = d["all"], d["clean"]
        lines.append(f"| {name} | {a['flagged']} | {pct(a['precision'])} | {pct(a['recall'])} | "
                     f"{c['flagged']} | {pct(c['precision'])} | {pct(c['recall'])} | {pct(c.get('act_precision'))} |")
    return lines + [
        f"\nwrong predictions: {det['any']['all']['wrong']} (all), {det['any']['clean']['wrong']} (gold-clean)",
        f"ms per query (whole stage): median {speed['median_ms']}, p95 {speed['p95_ms']} over {speed['n']} queries",
        f"gold-suspect questions ({len(suspects)}): "
        + ", ".join(f"{q} [{'/'.join(c)}]" for q, c in suspects.items())]
