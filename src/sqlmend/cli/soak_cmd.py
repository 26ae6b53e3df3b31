"""``sqlmend bench soak`` (the service for minutes, watched for leaks: :mod:`sqlmend.stress.soak`),
``sqlmend bench pathological`` (queries that never end or allocate without bound, on each engine:
:mod:`sqlmend.stress.pathological`) and ``sqlmend bench scale`` (a correction's cost on big databases:
:mod:`sqlmend.bench.scale`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from sqlmend.errors import SqlmendError


def bench_soak(
    minutes: float = typer.Option(30.0, help="how long the load runs (fractions allowed; at most 240)"),
    pred: Path = typer.Option(None, help="a Spider-dev prediction file (default: the first shared one)"),
    rate: float = typer.Option(2.0, help="requests per second, all clients together"),
    clients: int = typer.Option(4, help="client threads"),
    interval: float = typer.Option(60.0, help="seconds per row of the table"),
    timeout: float = typer.Option(5.0, help="the replicas' --timeout (work per SQL execution and per item)"),
    json_out: Path = typer.Option(None, "--json", help="write the report as JSON here"),
    work: Path = typer.Option(Path("runs/bench-soak"), help="folder for the replicas' logs"),
    data_root: str = typer.Option(None, help="folder holding spider/"),
) -> None:
    """Two `sqlmend serve` replicas (default stages) on one throw-away PostgreSQL memory store under
    steady loopback load: good, wrong, hostile and pathological requests. Prints a row per interval
    (requests, errors, p50/p95, each replica's RSS and open fds, PostgreSQL connections) and the
    growth per hour of RSS and fds. Exit 1 on any unexpected error.

    Example: sqlmend bench soak --minutes 30 --json runs/soak.json
    """
    from sqlmend.stress.soak import run_soak
    from sqlmend.data.predictions import shared_prediction_files

    try:
        report = run_soak(pred or shared_prediction_files(data_root=data_root)[0], work, minutes=minutes,
                          interval=interval, rate=rate, clients=clients, timeout=timeout, data_root=data_root,
                          echo=lambda line: typer.echo(line, err=True))
    except SqlmendError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(report.to_dict(), indent=1))
    typer.echo(report.markdown())
    for line in report.error_samples:
        typer.echo(f"error: {line}", err=True)
    if report.errors:
        raise typer.Exit(1)


def bench_pathological(
    engines: str = typer.Option("sqlite,postgres,duckdb", help="comma-separated engines; service: four requests "
                                "of the widest IN list the HTTP service accepts, and a normal one during and after"),
    only: str = typer.Option(None, help="comma-separated query names (default: all of each engine)"),
    timeout: float = typer.Option(None, help="the Corrector's timeout (default: the pipeline's, 30 s)"),
    json_out: Path = typer.Option(None, "--json", help="write the rows as JSON here"),
    work: Path = typer.Option(Path("runs/bench-pathological"), help="folder for the DuckDB copy"),
    data_root: str = typer.Option(None, help="folder holding spider/"),
) -> None:
    """Queries that never end or allocate without bound (a recursive CTE without a bound, a cartesian
    product, huge blobs and strings, a huge LIMIT over a join, hundreds of joins and UNIONs, IN lists of
    1,000 to 100,000 literals) through
    the Python API with the default stages on world_1 as SQLite, PostgreSQL (a throw-away server)
    and DuckDB. Per query: seconds, the item's reason, RSS and peak RSS, whether the next normal
    request is served. Exit 1 when a next request fails.

    Example: sqlmend bench pathological --engines sqlite --json runs/patho.json
    """
    from sqlmend.stress.pathological import markdown, run_pathological

    rows = _rows_of(lambda echo: run_pathological(
        _names(engines), work, timeout=timeout, only=_names(only) if only else None, data_root=data_root,
        echo=echo), json_out)
    typer.echo(markdown(rows))
    if not all(r.next_ok for r in rows):
        raise typer.Exit(1)


def bench_scale(
    sizes: str = typer.Option(",".join(map(str, (100_000, 1_000_000))),
                              help="comma-separated rows of orders (10^5 to 2 x 10^7; the default runs in minutes)"),
    engines: str = typer.Option("sqlite,postgres", help="comma-separated engines: sqlite, postgres"),
    seed: int = typer.Option(0, help="the generated data's seed"),
    timeout: float = typer.Option(30.0, help="the pipeline's timeout (the item's budget is 0.8 x that)"),
    work: Path = typer.Option(None, help="folder of the generated SQLite files and the caches, kept for the next "
                                         "run (default: <cache>/bench/scale; 2 x 10^7 rows take 1.4 GB)"),
    json_out: Path = typer.Option(None, "--json", help="write the results as JSON here"),
    html: Path = typer.Option(None, "--html", help="write a self-contained HTML report with the plots here"),
    svg: Path = typer.Option(None, "--svg", help="write the plots as SVG files in this folder"),
) -> None:
    """What a correction costs on a big database against its distinct queries: seeded shop databases
    (orders of N rows, customers, 500 side tables) on SQLite and PostgreSQL (a throw-away server), a fixed
    set of wrong and right queries through the default stages. Per size: the first correction of a
    process with an empty cache (value index built), the next process's (index reused), per query the
    correction's seconds, its distinct queries' seconds alone, their ratio, the queries run and reused,
    and the peak memory. Exit 1 when a query's correction passes 1.5 x its queries + 0.5 s or gives
    another SQL than expected.

    Example: sqlmend bench scale --sizes 100000,1000000,20000000 --engines sqlite --work /tmp/scale --html scale.html
    """
    from sqlmend.bench.scale import markdown, run_scale, write_html, write_svgs

    results = _rows_of(lambda echo: run_scale([int(s) for s in _names(sizes)], _names(engines), work, seed=seed,
                                              timeout=timeout, echo=echo), json_out)
    if html:
        typer.echo(f"wrote {write_html(html, results)}", err=True)
    for path in write_svgs(svg, results) if svg else ():
        typer.echo(f"wrote {path}", err=True)
    typer.echo(markdown(results))
    if not all(r.within and all(q.ok for q in r.warm) for r in results):
        raise typer.Exit(1)


def _names(text: str) -> list[str]:
    """A comma-separated option as its items."""
    return [t.strip() for t in text.split(",") if t.strip()]


def _rows_of(run: Any, json_out: Path | None) -> list[Any]:
    """Run a benchmark (``run(echo)``), its lines on stderr; its rows also as JSON to ``json_out``; a clear
    error is ``error: ...`` and exit 1."""
    try:
        rows = run(lambda line: typer.echo(line, err=True))
    except (SqlmendError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps([r.to_dict() for r in rows], indent=1))
    return rows


def register(app: typer.Typer) -> None:
    """Add ``soak``, ``pathological`` and ``scale`` to ``sqlmend bench``."""
    from sqlmend.cli import bench_app

    bench_app.command("soak")(bench_soak)
    bench_app.command("pathological")(bench_pathological)
    bench_app.command("scale")(bench_scale)
