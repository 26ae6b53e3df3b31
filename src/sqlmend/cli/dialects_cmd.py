"""``sqlmend bench dialects``: gold queries in another dialect's spelling, a literal in another form
than the column stores, a model's raw answer; restored, still failing or wrong rows, per kind."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from sqlmend import rules
from sqlmend.cli.output import QUIET, refuse_dev
from sqlmend.errors import SqlmendError

_ENGINES = ("sqlite", "postgres")


def bench_dialects_cmd(
    dataset: str = typer.Option("spider-dev", "--dataset", help="spider-train to develop, spider-dev to report"),
    engine: list[str] = typer.Option(["sqlite"], "--engine", help="sqlite (the dataset's files) or postgres (copies "
                                                                 "in a throw-away server); repeat for both"),
    questions: int = typer.Option(300, help="golds drawn (a seeded sample; 0: all)"),
    per_kind: int = typer.Option(60, "--per-kind", help="cases kept per kind (a seeded sample; 0: all)"),
    seed: int = typer.Option(0, help="seed of the sample and of each gold's variants"),
    workers: int = typer.Option(2, help="cases corrected at once"),
    timeout: float = typer.Option(10.0, help="seconds per query"),
    out: Path = typer.Option(None, "--out", "-o", help="write the reports as JSON here"),
    write_precision: bool = typer.Option(False, "--write-precision", help="also run the rules these errors need "
                                         "(EX04, CD02, VL10-VL13) alone on every case and store their precision "
                                         "in --precision-file (training data only)"),
    precision_file: Path = typer.Option(None, "--precision-file", metavar="FILE",
                                        help="where --write-precision writes (default: <cache>/rules/precision.json; "
                                             "merged with the measurements there or in use)"),
    quiet: bool = QUIET,
) -> None:
    """Gold queries written as users, agents and models write them, corrected by the default pipeline.

    Each gold gets variants of three families: another dialect (the gold in T-SQL, MySQL,
    PostgreSQL, Oracle; TOP, FETCH FIRST, ILIKE, UCASE, LEN, ::numeric, CONCAT, CONTAINS, YEAR),
    a literal in another form (= NULL, != NULL, TRUE/FALSE for a stored text flag, a date in
    another format, a value without its accents, a year compared as a number), a model's raw
    answer (a markdown fence, a sentence before or after). Per kind: cases that break, and of
    those restored (the reference's rows, no clause dropped), still failing, wrong rows.

    Example: sqlmend bench dialects --dataset spider-dev --engine sqlite --engine postgres
    """
    from sqlmend.bench.dialects import bench_dialects, markdown, precision_record
    from sqlmend.bench.static import default_precision_path
    from sqlmend.data import load_dataset

    unknown = [e for e in engine if e not in _ENGINES]
    if unknown:
        typer.echo(f"error: unknown engine {', '.join(unknown)}; known: {', '.join(_ENGINES)}", err=True)
        raise typer.Exit(2)
    if write_precision:
        refuse_dev(dataset, "precision is measured")
    try:
        ds = load_dataset(dataset)
        reports = [bench_dialects(ds, e, questions=questions or None, per_kind=per_kind or None, seed=seed,
                                  workers=workers, timeout=timeout, measure=write_precision, progress=not quiet,
                                  echo=lambda line: typer.echo(line, err=True)) for e in engine]
    except (SqlmendError, RuntimeError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None
    for report in reports:
        typer.echo(markdown(report) + "\n")
    if out:
        from dataclasses import asdict

        out.write_text(json.dumps([asdict(r) for r in reports], indent=1, default=str))
    if write_precision:
        target = precision_file or default_precision_path()
        target.parent.mkdir(parents=True, exist_ok=True)
        old = json.loads(target.read_text()) if target.exists() else rules.measured()
        command = (f"sqlmend bench dialects --dataset {dataset} --questions {questions} --per-kind {per_kind} "
                   f"--seed {seed} --write-precision")
        measured = {code: m for r in reports for code, m in precision_record(r, command).items()}
        target.write_text(json.dumps(rules.merge_measured(old, {"rules": measured}), indent=1) + "\n")
        typer.echo(f"wrote {target}; the rules read it when {rules.PRECISION_ENV}={target} "
                   f"(otherwise the packaged {rules.PRECISION_FILE.name})")


def register(app: typer.Typer) -> None:
    """Add ``dialects`` to ``sqlmend bench``."""
    from sqlmend.cli import bench_app

    bench_app.command("dialects")(bench_dialects_cmd)
