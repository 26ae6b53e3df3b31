"""``sqlmend bench soak`` (the service for minutes, watched for leaks: :mod:`sqlmend.bench.soak`) and
``sqlmend bench pathological`` (queries that never end or allocate without bound, on each engine:
:mod:`sqlmend.bench.pathological`)."""

from __future__ import annotations

import json
from pathlib import Path

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
    from sqlmend.bench.soak import run_soak
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


def register(app: typer.Typer) -> None:
    """Add ``soak`` to ``sqlmend bench``."""
    from sqlmend.cli import bench_app

    bench_app.command("soak")(bench_soak)
