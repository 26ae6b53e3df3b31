"""``sqlmend bench warehouse``: sqlmend on a warehouse of many schemas and on schemas of thousands of tables
(:mod:`sqlmend.bench.warehouse`)."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

import typer

from sqlmend.errors import SqlmendError


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(sorted({int(x) for x in text.split(",") if x.strip()}))
    except ValueError:
        raise typer.BadParameter(f"expected table counts such as 100,2000,10000, got {text!r}") from None
    if not sizes or sizes[0] < 1 or sizes[-1] > 20_000:
        raise typer.BadParameter(f"table counts between 1 and 20,000, got {text!r}")
    return sizes


def bench_warehouse(
    dataset: str = typer.Option("spider-dev", "--dataset", "-d",
                                help="spider-train to develop on, spider-dev to report"),
    engine: list[str] = typer.Option(["postgres", "duckdb"], "--engine",
                                     help="where the warehouse is loaded: postgres (a throw-away server) and/or "
                                          "duckdb; repeat for both; --engine none for the size rows alone"),
    limit: int = typer.Option(None, help="golds at most (a seeded sample; default: every gold that runs there)"),
    per_kind: int = typer.Option(30, help="bench names' variants per kind and name count on the warehouse "
                                          "(0: none)"),
    sizes: str = typer.Option("100,10000", help="table counts of the generated schema (size rows); '' for none"),
    size_engine: list[str] = typer.Option(["sqlite", "postgres"], "--size-engine",
                                          help="engines of the generated schema: sqlite and/or postgres"),
    seed: int = typer.Option(0, help="seed of the sample and of the variants"),
    workers: int = typer.Option(2, help="tasks corrected at once"),
    timeout: float = typer.Option(10.0, help="seconds per query"),
    out: Path = typer.Option(Path("runs/bench-warehouse"), "--out", "-o",
                             help="report folder (report.json with every changed gold and wrong-row example, "
                                  "report.md); the generated SQLite schemas are kept there for the next run"),
    data: str = typer.Option(None, "--data-root", help="folder holding spider/ (default: found)"),
) -> None:
    """Spider's databases as the schemas of one PostgreSQL and one DuckDB database (838 relations, the same
    table names in several schemas), and a generated schema of N tables.

    Prints, per engine: the golds written with their schema that come back changed (none but listed gold
    quirks); the golds written without it (as a model that does not know the schema writes them) that
    come back restored, still failing (kept) or with wrong rows (a name read from another schema); the
    same for bench names' variants; and per size, the seconds to open the database and correct a first
    query, a name fix, and the peak memory, each against the smallest size.

    Example: sqlmend bench warehouse --dataset spider-dev --engine postgres --engine duckdb --sizes 100,2000,10000
    """
    from sqlmend.bench.warehouse import ENGINES, SIZE_ENGINES, bench_sizes, bench_warehouse as run, markdown
    from sqlmend.data.datasets import load_dataset

    engines = tuple(e for e in engine if e != "none")
    bad = [e for e in engines if e not in ENGINES] + [e for e in size_engine if e not in SIZE_ENGINES]
    if bad:
        typer.echo(f"error: unknown engine {', '.join(bad)}; known: {', '.join(ENGINES)} (--engine), "
                   f"{', '.join(SIZE_ENGINES)} (--size-engine)", err=True)
        raise typer.Exit(2)
    counts = _sizes(sizes) if sizes.strip() else ()
    echo = lambda line: typer.echo(line, err=True)  # noqa: E731
    out.mkdir(parents=True, exist_ok=True)

    def write(report: dict) -> str:  # after each part: a long run keeps what it measured
        report["date"] = _dt.date.today().isoformat()
        text = markdown(report)
        (out / "report.json").write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
        (out / "report.md").write_text(text, encoding="utf-8")
        return text

    try:
        ds = load_dataset(dataset, data_root=data)
        report = run(ds, engines, limit=limit, per_kind=per_kind, seed=seed, workers=workers, timeout=timeout,
                     echo=echo, done=write) if engines else {"dataset": ds.name, "seed": seed}
        if counts:
            report["sizes"] = bench_sizes(tuple(size_engine), counts, work=out / "schemas", echo=echo)
    except (SqlmendError, RuntimeError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None
    text = write(report)
    typer.echo(f"{report['date']}\n\n{text}")


def register(app: typer.Typer) -> None:
    """Add ``warehouse`` to ``sqlmend bench``."""
    from sqlmend.cli import bench_app

    bench_app.command("warehouse")(bench_warehouse)
