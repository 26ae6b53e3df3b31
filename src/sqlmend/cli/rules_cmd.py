"""``sqlmend check``, ``sqlmend rules`` and ``sqlmend bench static``: the static rule catalogue."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from sqlmend import rules
from sqlmend.cli.output import QUIET, REQUIRE_READ_ONLY, print_table, refuse_dev
from sqlmend.errors import ConfigError, SqlmendError
from sqlmend.progress import bar as progress_bar


def _finding_lines(findings) -> list[str]:
    out = []
    for f in findings:
        out.append(f"  {f.code} [{f.severity}] {f.describe()}")
        if f.location:
            out.append(f"      at: {f.location}")
        if f.evidence:
            out.append(f"      evidence: {json.dumps(f.evidence, default=str)[:300]}")
        for fix in f.fixes:
            out.append(f"      fix: {json.dumps(fix, default=str)}")
    return out


def check_cmd(
    db: str = typer.Option(None, "--db", help="Database: a .sqlite path, postgresql://... or duckdb:///..."),
    question: str = typer.Option("", "--question", help="The natural-language question."),
    sql_text: str = typer.Option(None, "--sql", "-s", help="The SQL to check."),
    dataset: str = typer.Option(None, "--dataset", help="Batch form: a dataset name (spider-dev) or task file."),
    pred: Path = typer.Option(None, "--pred", help="Batch form: a prediction file for --dataset."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (one object per line in batch form)."),
    timeout: float = typer.Option(10.0, help="Seconds each query and probe may run."),
    alternative: list[str] = typer.Option(None, "--alternative", metavar="SQL",
                                          help="Another answer to the question (repeatable): the alternatives' "
                                               "vote is reported too (the consensus stage, nothing replaced)."),
    require_read_only_login: bool = REQUIRE_READ_ONLY,
    quiet: bool = QUIET,
) -> None:
    """Run the static rules on one SQL (--db/--sql) or on a prediction file (--dataset/--pred).

    Prints each finding with its code, severity, error type, message, location,
    evidence and proven fix, and the rewrite the strict fixes give when the
    validate-or-retain guard accepts it. With --alternative, also how many other
    answers return the query's rows (finding `consensus` when none does).

    Example: sqlmend check --db concert_singer.sqlite --question "..." --sql "..." --alternative "SELECT ..."
    """
    from sqlmend.api import check_answer
    from sqlmend.cli.correct_cmd import answer_one
    from sqlmend.pipeline import PipelineConfig
    from sqlmend.types import json_text

    try:
        if dataset:
            _check_batch(dataset, pred, as_json, timeout, quiet, require_read_only_login)
            return
        if not db or sql_text is None:
            raise typer.BadParameter("give --db and --sql, or --dataset and --pred")
        # the static stage (and the alternatives' vote), no model, on the path of every door (api.Correctors.answer)
        stages = ["static", "consensus"] if alternative else ["static"]
        config = PipelineConfig(stages=stages, timeout=timeout, require_read_only_login=require_read_only_login)
        correction, _ = answer_one(db, question, sql_text, "", config, check=True,
                                   alternatives=list(alternative or []))
    except ConfigError as exc:  # a login that may write, under --require-read-only-login
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    trace = correction.stages[0] if correction.stages else None
    if correction.error or trace is None or trace.status == "failed":
        typer.echo(f"error: {correction.error or (trace.note if trace else 'nothing ran')}", err=True)
        raise typer.Exit(2)
    if as_json:  # the service's /check answer, and the static stage's rewrite
        typer.echo(json_text({**check_answer(correction.to_dict()), "candidate": trace.candidate,
                              "verdict": trace.verdict.__dict__ if trace.verdict else None}))
        return
    typer.echo(f"{len(trace.findings)} finding(s)" + (":" if trace.findings else ""))
    for line in _finding_lines(trace.findings):
        typer.echo(line)
    if trace.verdict is not None:
        typer.echo(f"rewrite {trace.verdict.word} ({trace.verdict.why}): {trace.verdict.sql}")
    for other in correction.stages[1:]:  # the alternatives' vote
        typer.echo(f"{other.stage}: {other.note}")
        for line in _finding_lines(other.findings):
            typer.echo(line)


def _check_batch(dataset_name: str, pred: Path | None, as_json: bool, timeout: float, quiet: bool,
                 require_read_only_login: bool = False) -> None:
    from sqlmend.bench.static import check_file
    from sqlmend.data import load_dataset, load_predictions
    from sqlmend.db.account import admit
    from sqlmend.pipeline import task_logins

    ds = load_dataset(dataset_name)
    admit(task_logins(ds.tasks, ds.db_root), require_read_only_login)
    preds = load_predictions(pred, ds) if pred else {t.question_id: t.sql for t in ds}
    for record in check_file(ds, preds, timeout, progress=not (as_json or quiet) and sys.stderr.isatty()):
        if as_json:
            typer.echo(json.dumps(record, default=str))
        elif record.get("error"):
            typer.echo(f"{record['question_id']}: error: {record['error']}")
        elif record["findings"]:
            typer.echo(f"{record['question_id']} ({record['db_id']}): "
                       + ", ".join(f["code"] for f in record["findings"]))


def rules_cmd(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the rule catalogue: code, name, error type, severity, measured precision.

    A rule acts as strict (its fixes are applied automatically) only when declared
    strict and measured at >= 99.5% precision on gold-clean questions; for a rule
    that fixes, the act precision counts (a flag on a correct query counts against
    it only when the rule's own fix turns that query wrong). Unmeasured rules are
    advisory. The measurements are the packaged rules/precision.json, or
    the file $SQLMEND_RULES_PRECISION names (`sqlmend bench static --write-precision`
    writes one).
    """
    try:
        measured = rules.measured()
        source = rules.precision_file()
    except SqlmendError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    rows = []
    for rule in rules.all_rules():
        m = measured.get("rules", {}).get(rule.code, {})
        rows.append({"code": rule.code, "name": rule.name, "error_type": rule.error_type,
                     "declared": rule.severity, "severity": rules.effective_severity(rule, measured),
                     "why": rules.severity_reason(rule, measured),
                     "fixable": rule.fixable, "precision_clean": m.get("precision_clean"),
                     "precision_all": m.get("precision_all"), "act_precision_clean": m.get("act_precision_clean"),
                     "flagged": m.get("flagged_all"),
                     "message": rule.message})
    if as_json:
        typer.echo(json.dumps(rows))
        return

    def pct(v):
        return "-" if v is None else f"{100 * v:.1f}%"

    print_table(("code", "name", "error type", "severity", "fix", "precision (clean)", "precision (all)",
                 "act precision (clean)", "flagged"),
                [(r["code"], r["name"], r["error_type"],
                  r["severity"] if r["why"] in ("measured", "declared advisory") else f"{r['severity']} ({r['why']})",
                  "yes" if r["fixable"] else "", pct(r["precision_clean"]), pct(r["precision_all"]),
                  pct(r["act_precision_clean"]) if r["fixable"] else "", r["flagged"] or 0) for r in rows],
                title=f"sqlmend rules (measured {measured.get('date', 'never')}, "
                      f"{'packaged' if source == rules.PRECISION_FILE else source})")


_WRITE_HELP = ("Store each rule's measured precision in --precision-file (the packaged "
               "rules/precision.json is never written).")
_FILE_HELP = ("Where --write-precision writes (default: <cache>/rules/precision.json). The rules "
              "use it when $SQLMEND_RULES_PRECISION names it.")


def bench_static(
    pred: list[Path] = typer.Option(..., "--pred", help="Prediction file(s); repeat the option."),
    dataset: str = typer.Option("spider-dev", "--dataset", help="Dataset name or task file."),
    timeout: float = typer.Option(10.0, help="Seconds each query and probe may run."),
    write_precision: bool = typer.Option(False, "--write-precision", help=_WRITE_HELP),
    precision_file: Path = typer.Option(None, "--precision-file", metavar="FILE", help=_FILE_HELP),
    out: Path = typer.Option(None, "--out", "-o", help="Write the full report as JSON here."),
    limit: int = typer.Option(0, help="Only the first N questions (0: all)."),
    quiet: bool = QUIET,
) -> None:
    """Correct with only the static stage; report detection precision/recall per rule, the paired
    report (fixed / regressed / ΔEX) per file, all and gold-clean, and ms per query.

    Example: sqlmend bench static --pred din-sql_gpt-4.sql --write-precision --precision-file my.json
    """
    from sqlmend.evaluation import paired_markdown
    from sqlmend.bench.static import bench_static as run, default_precision_path, detection_lines, \
        precision_record

    result = run(pred, dataset=dataset, timeout=timeout, limit=limit, progress=not quiet)
    for paired in result.paired:
        typer.echo(paired_markdown(paired))
    typer.echo("\n".join(detection_lines(result.report)))
    if out:
        out.write_text(json.dumps(result.report, indent=1, default=str))
    if write_precision:
        target = precision_file or default_precision_path()
        target.parent.mkdir(parents=True, exist_ok=True)
        old = json.loads(target.read_text()) if target.exists() else rules.measured()
        target.write_text(json.dumps(rules.merge_measured(old, precision_record(result.report, pred)), indent=1) + "\n")
        typer.echo(f"wrote {target}; the rules read it when {rules.PRECISION_ENV}={target} "
                   f"(otherwise the packaged {rules.PRECISION_FILE.name})")


def bench_static_train_cmd(
    questions: int = typer.Option(2500, help="Training questions drawn (a seeded sample)."),
    seed: int = typer.Option(0, help="Seed of the sample and of the column each break picks."),
    dataset: str = typer.Option("spider-train", "--dataset", help="A training set (never dev/test)."),
    out: Path = typer.Option(None, "--out", "-o", help="Write the report as JSON here."),
) -> None:
    """The static stage's value fixes on training golds broken the way the rules claim to repair: a
    literal moved to another text column of its table (VL07), its letter case changed (VL01). Counts
    the rewrites that return the gold's rows and those that return other rows.

    Example: sqlmend bench static-train --questions 2500
    """
    import datetime as _dt

    from sqlmend.bench.static_train import bench_static_train, markdown
    from sqlmend.data import load_dataset

    refuse_dev(dataset)
    ds = load_dataset(dataset)
    with progress_bar(total=min(questions, len(ds.tasks)), desc="static-train", unit="q", leave=False) as bar:
        report = bench_static_train(ds, questions=questions, seed=seed, progress=lambda: bar.update(1))
    typer.echo(markdown(report))
    if out:
        report.update({"date": _dt.date.today().isoformat(), "dataset": dataset, "questions": questions,
                       "seed": seed})
        out.write_text(json.dumps(report, indent=1))


def register(app: typer.Typer) -> None:
    """Add ``check``, ``rules``, ``bench static`` and ``bench static-train`` to the command line."""
    from sqlmend.cli import bench_app

    app.command("check")(check_cmd)
    app.command("rules")(rules_cmd)
    bench_app.command("static")(bench_static)
    bench_app.command("static-train")(bench_static_train_cmd)
