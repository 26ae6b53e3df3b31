"""``sqlmend check``, ``sqlmend rules`` and ``sqlmend bench static``: the static rule catalogue."""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import replace
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table
from tqdm import tqdm

from sqlmend import rules
from sqlmend.errors import SqlmendError
from sqlmend.rules.measure import Judged, detection, latency
from sqlmend.rules.stage import StaticStage
from sqlmend.stage import RunSettings, StageContext
from sqlmend.types import Task

_console = Console()


def _finding_lines(findings) -> list[str]:
    out = []
    for f in findings:
        out.append(f"  {f.code} [{f.severity}] {f.error_type}: {f.message}")
        if f.location:
            out.append(f"      at: {f.location}")
        if f.evidence:
            out.append(f"      evidence: {json.dumps(f.evidence, default=str)[:300]}")
        for fix in f.fixes:
            out.append(f"      fix: {json.dumps(fix, default=str)}")
    return out


def _run_stage(db: Any, task: Task, timeout: float):
    run = RunSettings(timeout=timeout)
    return StaticStage(run=run).run(StageContext(task=task, db=db, sql=task.sql, run=run))


def check_cmd(
    db: str = typer.Option(None, "--db", help="Database: a .sqlite path, postgresql://... or duckdb:///..."),
    question: str = typer.Option("", "--question", "-q", help="The natural-language question."),
    sql_text: str = typer.Option(None, "--sql", "-s", help="The SQL to check."),
    dataset: str = typer.Option(None, "--dataset", help="Batch form: a dataset name (spider-dev) or task file."),
    pred: Path = typer.Option(None, "--pred", help="Batch form: a prediction file for --dataset."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (one object per line in batch form)."),
    timeout: float = typer.Option(10.0, help="Seconds each query and probe may run."),
) -> None:
    """Run the static rules on one SQL (--db/--sql) or on a prediction file (--dataset/--pred).

    Prints each finding with its code, severity, error type, message, location,
    evidence and proven fix, and the rewrite the strict fixes give when the
    validate-or-retain guard accepts it.
    """
    from sqlmend.db import connect

    if dataset:
        _check_batch(dataset, pred, as_json, timeout)
        return
    if not db or sql_text is None:
        raise typer.BadParameter("give --db and --sql, or --dataset and --pred")
    task = Task(question_id="cli", db_id=Path(db).stem, question=question, sql=sql_text)
    try:
        with connect(db) as conn:
            trace = _run_stage(conn, task, timeout)
    except SqlmendError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    if as_json:
        typer.echo(json.dumps({"findings": [f.to_dict() for f in trace.findings],
                               "candidate": trace.candidate,
                               "verdict": trace.verdict.__dict__ if trace.verdict else None},
                              default=str))
        return
    typer.echo(f"{len(trace.findings)} finding(s)" + (":" if trace.findings else ""))
    for line in _finding_lines(trace.findings):
        typer.echo(line)
    if trace.verdict is not None:
        typer.echo(f"rewrite {'accepted' if trace.verdict.accepted else 'rejected'} "
                   f"({trace.verdict.reason}): {trace.verdict.sql}")


def _check_batch(dataset_name: str, pred: Path | None, as_json: bool, timeout: float) -> None:
    from sqlmend.bench import load_dataset, load_predictions
    from sqlmend.db import connect

    ds = load_dataset(dataset_name)
    preds = load_predictions(pred, ds) if pred else {t.question_id: t.sql for t in ds}
    for task in tqdm(ds.tasks, desc="check", disable=as_json or not sys.stderr.isatty()):
        task = Task(**{**task.to_dict(), "sql": preds.get(task.question_id, "")})
        path = ds.db_path(task.db_id)
        record: dict[str, Any] = {"question_id": task.question_id, "db_id": task.db_id}
        try:
            if path is None:
                raise SqlmendError(f"database {task.db_id} not found")
            with connect(str(path)) as conn:
                trace = _run_stage(conn, task, timeout)
            record.update(findings=[f.to_dict() for f in trace.findings],
                          sql=trace.verdict.sql if trace.verdict else task.sql)
        except SqlmendError as exc:  # per-item error; the batch goes on
            record["error"] = str(exc)
        if as_json:
            typer.echo(json.dumps(record, default=str))
        elif record.get("error"):
            typer.echo(f"{task.question_id}: error: {record['error']}")
        elif record["findings"]:
            typer.echo(f"{task.question_id} ({task.db_id}): "
                       + ", ".join(f["code"] for f in record["findings"]))


def rules_cmd(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the rule catalogue: code, name, error type, severity, measured precision.

    A rule acts as strict (its fixes are applied automatically) only when declared
    strict and measured at >= 99.5% precision on gold-clean questions by
    `sqlmend bench static --write-precision`; unmeasured rules are advisory.
    """
    measured = rules.measured()
    rows = []
    for rule in rules.all_rules():
        m = measured.get("rules", {}).get(rule.code, {})
        rows.append({"code": rule.code, "name": rule.name, "error_type": rule.error_type,
                     "declared": rule.severity, "severity": rules.effective_severity(rule, measured),
                     "why": rules.severity_reason(rule, measured),
                     "fixable": rule.fixable, "precision_clean": m.get("precision_clean"),
                     "precision_all": m.get("precision_all"), "flagged": m.get("flagged_all"),
                     "message": rule.message})
    if as_json:
        typer.echo(json.dumps(rows))
        return
    table = Table(title=f"sqlmend rules (measured {measured.get('date', 'never')})")
    for col in ("code", "name", "error type", "severity", "fix", "precision (clean)",
                "precision (all)", "flagged"):
        table.add_column(col)
    for r in rows:
        pct = lambda v: "-" if v is None else f"{100 * v:.1f}%"  # noqa: E731
        severity = r["severity"] if r["why"] in ("measured", "declared advisory") else \
            f"{r['severity']} ({r['why']})"
        table.add_row(r["code"], r["name"], r["error_type"], severity,
                      "yes" if r["fixable"] else "", pct(r["precision_clean"]),
                      pct(r["precision_all"]), str(r["flagged"] or 0))
    _console.print(table)


def bench_static(
    pred: list[Path] = typer.Option(..., "--pred", help="Prediction file(s); repeat the option."),
    dataset: str = typer.Option("spider-dev", "--dataset", help="Dataset name or task file."),
    timeout: float = typer.Option(10.0, help="Seconds each query and probe may run."),
    write_precision: bool = typer.Option(False, "--write-precision",
                                         help="Store measured precision in rules/precision.json."),
    out: Path = typer.Option(None, "--out", help="Write the full report as JSON here."),
    limit: int = typer.Option(0, help="Only the first N questions (0: all)."),
) -> None:
    """Correct with only the static stage; report detection precision/recall per rule, the paired
    report (fixed / regressed / ΔEX) per file, all and gold-clean, and ms per query."""
    import time

    from sqlmend.bench import compare, evaluate, load_dataset, load_predictions, paired_markdown
    from sqlmend.db import connect

    full = load_dataset(dataset)
    # with --limit, evaluate a smaller dataset (not the whole one with predictions missing)
    ds = replace(full, tasks=full.tasks[:limit]) if limit else full
    tasks = ds.tasks
    conns: dict[str, Any] = {}

    def db_for(db_id: str):
        if db_id not in conns:
            path = ds.db_path(db_id)
            conns[db_id] = connect(str(path)) if path else None
        return conns[db_id]

    # gold-suspect questions: the gold itself triggers a rule
    suspects: dict[str, list[str]] = {}
    for task in tqdm(tasks, desc="rules on gold"):
        conn = db_for(task.db_id)
        if conn is None or not task.gold:
            continue
        codes = sorted({f.code for f in rules.check(conn, task.gold, timeout=timeout)})
        if codes:
            suspects[task.question_id] = codes
    judged: list[Judged] = []
    seconds: list[float] = []
    paired: dict[str, Any] = {}
    for path in pred:
        preds = load_predictions(path, full)
        corrected = dict(preds)
        findings: dict[str, list] = {}
        for task in tqdm(tasks, desc=f"static {path.stem}"):
            conn = db_for(task.db_id)
            if conn is None:
                continue
            t = Task(**{**task.to_dict(), "sql": preds.get(task.question_id, "")})
            start = time.perf_counter()
            trace = _run_stage(conn, t, timeout)
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
        typer.echo(paired_markdown(report))
        for qid in sub:
            res = before.result(qid)
            if not res.scored:
                continue
            fs = findings.get(qid, [])
            judged.append(Judged(qid, path.stem, {f.code for f in fs},
                                 {f.code for f in fs if f.severity == "strict"}, res.correct,
                                 qid in suspects))
    for conn in conns.values():
        if conn is not None:
            conn.close()
    codes = [r.code for r in rules.all_rules()]
    det = detection(judged, codes)
    speed = latency(seconds)
    _print_detection(det, speed, suspects)
    report = {"date": _dt.date.today().isoformat(), "dataset": dataset,
              "files": [p.name for p in pred], "detection": det, "latency": speed,
              "paired": paired, "gold_suspect": suspects}
    if out:
        out.write_text(json.dumps(report, indent=1, default=str))
    if write_precision:
        stored = {"date": report["date"], "dataset": dataset, "files": report["files"],
                  "command": "sqlmend bench static --write-precision " + " ".join(
                      f"--pred {p}" for p in pred),
                  "rules": {c: {"precision_clean": d["clean"]["precision"],
                                "precision_all": d["all"]["precision"],
                                "flagged_clean": d["clean"]["flagged"],
                                "flagged_all": d["all"]["flagged"]}
                            for c, d in det["rules"].items()}}
        rules.PRECISION_FILE.write_text(json.dumps(stored, indent=1) + "\n")
        typer.echo(f"wrote {rules.PRECISION_FILE}")


def _print_detection(det: dict, speed: dict, suspects: dict) -> None:
    def pct(v):
        return "-" if v is None else f"{100 * v:.1f}"

    lines = ["| rule | flagged (all) | precision % (all) | recall % (all) | flagged (clean) | "
             "precision % (clean) | recall % (clean) |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, d in [*det["rules"].items(), ("any rule", det["any"]), ("strict rules", det["strict"])]:
        a, c = d["all"], d["clean"]
        lines.append(f"| {name} | {a['flagged']} | {pct(a['precision'])} | {pct(a['recall'])} | "
                     f"{c['flagged']} | {pct(c['precision'])} | {pct(c['recall'])} |")
    typer.echo("\n".join(lines))
    typer.echo(f"\nwrong predictions: {det['any']['all']['wrong']} (all), "
               f"{det['any']['clean']['wrong']} (gold-clean)")
    typer.echo(f"ms per query (whole stage): median {speed['median_ms']}, p95 {speed['p95_ms']} "
               f"over {speed['n']} queries")
    typer.echo(f"gold-suspect questions ({len(suspects)}): "
               + ", ".join(f"{q} [{'/'.join(c)}]" for q, c in suspects.items()))


def register(app: typer.Typer) -> None:
    """Add ``check``, ``rules`` and ``bench static`` to the command line."""
    from sqlmend.cli import bench_app

    app.command("check")(check_cmd)
    app.command("rules")(rules_cmd)
    bench_app.command("static")(bench_static)
