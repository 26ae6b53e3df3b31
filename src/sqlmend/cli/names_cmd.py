"""``sqlmend bench names``: golds with names not in the schema through the default correction
(:mod:`sqlmend.bench.names`)."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

import typer

from sqlmend.errors import SqlmendError


def bench_names(
    dataset: str = typer.Option("spider-dev", "--dataset", "-d",
                                help="spider-train to develop on, spider-dev to report"),
    engine: list[str] = typer.Option(["sqlite"], "--engine", help="sqlite and/or postgres (a throw-away "
                                                                 "server with a sample of the databases); "
                                                                 "repeat for both"),
    per_kind: int = typer.Option(60, help="variants per kind and name count (one name, two names)"),
    kind: list[str] = typer.Option(None, "--kind", help="only these kinds (repeat); default: every one "
                                                        "(plural, camelCase, underscores, prefix, id, keyword, "
                                                        "edit, meaning, added)"),
    seed: int = typer.Option(0, help="seed of the variants and of PostgreSQL's sample of databases"),
    pg_databases: int = typer.Option(6, help="databases copied into PostgreSQL (a seeded sample, and one "
                                                  "for each kind of name the sample offers none of)"),
    workers: int = typer.Option(2, help="tasks corrected at once"),
    timeout: float = typer.Option(10.0, help="seconds per query"),
    out: Path = typer.Option(Path("runs/bench-names"), "--out", "-o", help="report folder (report.json "
                                                                           "with the wrong-row examples, "
                                                                           "report.md)"),
    data: str = typer.Option(None, "--data-root", help="folder holding spider/ (default: found)"),
) -> None:
    """Golds with one or two table or column names written the way users write them (plural,
    camelCase, underscores, a dropped or added prefix, id dropped, a keyword for a table, a one-letter
    edit), each variant one the engine refuses, through the default correction.

    Prints per kind and name count how many come back restored (the gold's rows, no clause of the
    gold dropped), with the gold's rows but a clause dropped, still failing, or with wrong rows.

    Example: sqlmend bench names --dataset spider-dev --engine sqlite --engine postgres --per-kind 60
    """
    from sqlmend.bench.names import ENGINES, bench_names as run, markdown
    from sqlmend.data.datasets import load_dataset

    from sqlmend.synth.names import KINDS

    bad = [k for k in kind or () if k not in KINDS]
    if bad:
        typer.echo(f"error: unknown kind {', '.join(bad)}; known: {', '.join(KINDS)}", err=True)
        raise typer.Exit(2)
    unknown = [e for e in engine if e not in ENGINES]
    if unknown:
        typer.echo(f"error: unknown engine {', '.join(unknown)}; known: {', '.join(ENGINES)}", err=True)
        raise typer.Exit(2)
    try:
        ds = load_dataset(dataset, data_root=data)
        report = run(ds, tuple(engine), per_kind=per_kind, seed=seed, workers=workers, timeout=timeout,
                     pg_databases=pg_databases, echo=lambda line: typer.echo(line, err=True),
                     kinds=tuple(kind) if kind else KINDS)
    except (SqlmendError, RuntimeError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None
    report["date"] = _dt.date.today().isoformat()
    text = markdown(report)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
    (out / "report.md").write_text(text, encoding="utf-8")
    typer.echo(f"{report['date']}\n\n{text}")


def register(app: typer.Typer) -> None:
    """Add ``names`` to ``sqlmend bench``."""
    from sqlmend.cli import bench_app

    bench_app.command("names")(bench_names)
