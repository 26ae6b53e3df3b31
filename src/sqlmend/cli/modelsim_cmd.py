"""``sqlmend bench model-sim``: the model strategies with a simulated model of known quality
(:mod:`sqlmend.bench.modelsim`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from sqlmend.errors import SqlmendError


def bench_model_sim(
    pred: list[Path] = typer.Option(None, "--pred", help="prediction file (repeatable; default: the shared "
                                                          "Spider-dev files)"),
    quality: list[float] = typer.Option(None, "--quality", help="model quality: fix rate and judge accuracy "
                                                                "(repeatable; default 0.2 0.4 0.6 0.8)"),
    strategy: list[str] = typer.Option(None, "--strategy", help="strategy (repeatable; default: all): errorllm, "
                                                                "mira, listwise, self-correction, din-sql, "
                                                                "self-debug, mac-sql"),
    dataset: str = typer.Option("spider-dev", help="the benchmark the predictions answer"),
    pool: list[Path] = typer.Option(None, "--pool", help="prediction file the wrong answers are drawn from "
                                                          "(repeatable; default: the shared files)"),
    http: bool = typer.Option(False, "--http", help="serve the simulated model over the OpenAI protocol on "
                                                    "loopback (as `sqlmend serve-model` does) and call it there"),
    echo_rate: float = typer.Option(0.1, help="share of rewrites that change nothing (at most 1 - quality)"),
    judge_accuracy: Optional[float] = typer.Option(None, help="judge accuracy for every quality (default: the quality)"),
    seed: int = typer.Option(0, help="the simulated model's seed (and MIRA's split's)"),
    model_gate: Optional[bool] = typer.Option(None, "--model-gate/--no-model-gate",
                                              help="the model gate for every strategy (default: on for "
                                                   "sqlmend's strategies, off for the baselines)"),
    sample: Optional[int] = typer.Option(None, help="a seeded sample of N questions per file (default: all)"),
    workers: int = typer.Option(2, help="questions corrected in parallel, and evaluator processes"),
    out: Path = typer.Option(Path("runs/model-sim"), "--out", "-o",
                             help="folder of the run folders (a rerun resumes from them)"),
    json_out: Optional[Path] = typer.Option(None, "--json", help="write the rows here as a JSON list"),
    html: Optional[Path] = typer.Option(None, "--html", help="write a self-contained HTML report with the curves"),
    svg: Optional[Path] = typer.Option(None, "--svg", help="write the two summary curves as SVG files in this folder"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress bars"),
) -> None:
    """Run each model strategy with a simulated model of known quality; pair it with no correction
    and with the default correction (no model).

    The simulated model answers a rewrite with the gold (re-written) with probability QUALITY,
    with no change with probability --echo-rate, else with a real wrong query for the same
    question from the other shared files; a judge's or verifier's question rightly with
    probability QUALITY. It stands for a model in a benchmark: never a default, never a claim
    about a real model. Per file, strategy and quality: fixed, regressed (also without the
    gold-suspect questions), ΔEX, Δ against the default, calls per query, correct queries the
    model was asked to touch and broke, and which check admitted each model rewrite. MIRA is
    measured on the test part of its split (its memory is built from the history part).
    About 10 minutes a file on 2 cores for every strategy at four qualities.

    Example: sqlmend bench model-sim --pred gpt-4_zero-shot.sql --quality 0.2 --quality 0.6 --json rows.json
    """
    from sqlmend.bench.modelsim import QUALITIES, STRATEGIES, bench_model_sim as run, markdown, pays_from
    from sqlmend.data.predictions import shared_prediction_files

    try:
        rows = run(list(pred or shared_prediction_files(dataset)), list(quality or QUALITIES),
                   list(strategy or STRATEGIES), out, dataset=dataset, pool_files=list(pool or []) or None, http=http,
                   seed=seed, echo_rate=echo_rate, judge_accuracy=judge_accuracy, workers=workers, sample=sample,
                   model_gate=model_gate,
                   progress=not quiet,
                   on_row=None if quiet else (lambda r: typer.echo(markdown([r]).splitlines()[-1], err=True)))
    except (SqlmendError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(markdown(rows))
    pays = pays_from(rows)
    typer.echo("pays from (beats the default on every file from this quality on): "
               + ", ".join(f"{k} {'never' if v is None else f'q={v:g}'}" for k, v in pays.items()))
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps([r.to_dict() for r in rows], indent=1) + "\n", encoding="utf-8")
    if html is not None:
        from sqlmend.bench.modelsim import write_html

        typer.echo(f"wrote {write_html(html, rows)}", err=True)
    if svg is not None:
        from sqlmend.bench.modelsim import write_svgs

        for path in write_svgs(svg, rows):
            typer.echo(f"wrote {path}", err=True)


def register(app: typer.Typer) -> None:
    """Add ``model-sim`` to ``sqlmend bench``."""
    from sqlmend.cli import bench_app

    bench_app.command("model-sim")(bench_model_sim)
