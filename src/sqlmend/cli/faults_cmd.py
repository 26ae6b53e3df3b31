"""``sqlmend bench faults``: each fault injected into real components, and what it cost
(:mod:`sqlmend.stress.faults`)."""

from __future__ import annotations

from pathlib import Path

import typer

from sqlmend.stress.faults import FAULTS
from sqlmend.errors import SqlmendError


def bench_faults(
    pred: Path = typer.Option(None, help="a Spider-dev prediction file (default: the first shared one)"),
    out: Path = typer.Option(Path("runs/bench-faults"), "--out", "-o",
                             help="report folder (report.json, report.md; work/ is made afresh)"),
    only: str = typer.Option(None, help=f"comma-separated faults to inject, of {', '.join(FAULTS)} (default: all)"),
    data_root: str = typer.Option(None, help="folder holding spider/"),
) -> None:
    """Inject each fault into real components; print what the user sees and what was lost.

    The PostgreSQL memory store (a throw-away server) stopped and restarted under two
    `sqlmend serve` replicas; a SQLite file locked by a writer, rewritten in place and
    deleted during a batch; a model endpoint on loopback that hangs, answers garbage or
    answers slowly; the checkpoint's disk full (a 64 KiB tmpfs as root, else a file-size
    limit). Per fault: items, items lost (the aim: 0), items with a clear error, whether a
    re-run completes them. Exit 1 when any item was lost. About 2 minutes.

    Example: sqlmend bench faults --out runs/faults
    """
    from sqlmend.stress.faults import markdown, run_faults
    from sqlmend.data.predictions import shared_prediction_files

    names = [s.strip() for s in only.split(",") if s.strip()] if only else None
    try:
        rows = run_faults(pred or shared_prediction_files(data_root=data_root)[0], out, names, data_root=data_root,
                          echo=lambda line: typer.echo(line, err=True))
    except SqlmendError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(markdown(rows))
    if any(r.lost for r in rows):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``faults`` to ``sqlmend bench``."""
    from sqlmend.cli import bench_app

    bench_app.command("faults")(bench_faults)
