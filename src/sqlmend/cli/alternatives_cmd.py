"""``sqlmend bench alternatives``: the consensus stage measured (:mod:`sqlmend.bench.alternatives`)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from sqlmend.cli.output import QUIET, write_reports
from sqlmend.errors import SqlmendError


def bench_alternatives(
    pred: list[Path] = typer.Option(..., "--pred", help="prediction file to correct (repeatable: each is measured "
                                                         "with the --alt files but itself as its alternatives)"),
    alt: list[Path] = typer.Option(..., "--alt", metavar="FILE",
                                   help="prediction file of other answers to the same questions (repeatable)"),
    risk: Optional[float] = typer.Option(None, "--risk", metavar="ALPHA",
                                         help="also the risk rule: its threshold calibrated on MIRA's history part "
                                              "of the questions so that at most ALPHA of the correct queries break "
                                              "in expectation, every rule then measured on the test part"),
    dataset: str = typer.Option("spider-dev", help="the benchmark the files answer (a name or a task file)"),
    db_root: Optional[str] = typer.Option(None, help="folder of <db_id>/<db_id>.sqlite (a task file's databases)"),
    seed: int = typer.Option(0, help="the seed of the history/test split (and of --sample)"),
    fraction: float = typer.Option(0.25, help="the history part's share per database"),
    sample: Optional[int] = typer.Option(None, help="a seeded sample of N questions (default: all)"),
    workers: int = typer.Option(2, help="questions corrected in parallel, and evaluator processes"),
    timeout: float = typer.Option(30.0, help="seconds per SQL execution"),
    out: Path = typer.Option(Path("runs/alternatives"), "--out", "-o",
                             help="folder of the run folders (a rerun resumes from them)"),
    json_out: Optional[Path] = typer.Option(None, "--json", help="write the rows and curves here (JSON)"),
    html: Optional[Path] = typer.Option(None, "--html", help="write a self-contained HTML report with the curves"),
    svg: Optional[Path] = typer.Option(None, "--svg", help="write each file's curve as an SVG file in this folder"),
    history_out: Optional[Path] = typer.Option(None, "--history-out", metavar="FILE",
                                               help="write the labelled history (with --risk: the history part) "
                                                    "for `sqlmend correct --risk ALPHA --risk-history FILE`; with "
                                                    "several --pred, FILE's name gets each file's name"),
    quiet: bool = QUIET,
) -> None:
    """Correct a prediction file with other answers as its alternatives; pair it with no correction and
    with the default correction; self-consistency as the baseline.

    Rows: default (no alternatives), strict (the consensus stage's default rule), self-consistency
    (the majority of the answers, ties to the prediction), and with --risk the risk rule, every row
    then also on the test part. Each: fixed, regressed (also without the gold-suspect questions),
    ΔEX, Δ vs default, flagged / precision of the vote, AUROC of P(error) of the prediction as given
    (the vote on it, an earlier stage's rewrite of it one more voter), seconds per query. About 10 minutes
    a file with four alternatives on 2 cores.

    Example: sqlmend bench alternatives --pred codes-1b.sql --alt c3sql.sql --alt din-sql.sql --risk 0.01 --json rows.json
    """
    from sqlmend.bench.alternatives import bench_alternatives as run, markdown, write_html, write_svgs

    reports = []
    try:
        for p in pred:
            alts = [a for a in alt if a.resolve() != p.resolve()]
            hist = None
            if history_out is not None:
                hist = history_out if len(pred) == 1 else history_out.with_name(f"{history_out.stem}-{p.stem}"
                                                                                 f"{history_out.suffix}")
            reports.append(run(p, alts, out, dataset=dataset, db_root=db_root, risk=risk, seed=seed, fraction=fraction,
                               workers=workers, timeout=timeout, sample=sample, history_out=hist, progress=not quiet,
                               on_row=None if quiet else (lambda r: typer.echo(markdown([r]).splitlines()[-1],
                                                                               err=True))))
    except SqlmendError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(markdown([r for rep in reports for r in rep.rows]))
    write_reports(reports, json_out, html, svg, write_html, write_svgs)


def register(app: typer.Typer) -> None:
    """Add ``alternatives`` to ``sqlmend bench``."""
    from sqlmend.cli import bench_app

    bench_app.command("alternatives")(bench_alternatives)
