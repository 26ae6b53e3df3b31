"""``sqlmend bench model-sim``: the model strategies with a stand-in model whose answers are known:
a real system's prediction file replayed, or a simulated model (:mod:`sqlmend.bench.modelsim`)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from sqlmend.cli.output import write_reports
from sqlmend.errors import SqlmendError


def bench_model_sim(
    pred: list[Path] = typer.Option(None, "--pred", help="prediction file to correct (repeatable; default: the "
                                                          "shared Spider-dev files)"),
    replay: list[Path] = typer.Option(None, "--replay", help="the model is this prediction file replayed "
                                                              "(repeatable: call i of a question draws file i); "
                                                              "a --pred that is a replayed file is skipped"),
    quality: list[float] = typer.Option(None, "--quality", help="simulated model quality (repeatable; default "
                                                                "0.2 0.4 0.6 0.8); not with --replay"),
    independent: bool = typer.Option(False, "--independent", help="the older simulated model, right on q of "
                                                                  "every question alike (default: difficulty-aware)"),
    strategy: list[str] = typer.Option(None, "--strategy", help="strategy (repeatable; default: all): errorllm, "
                                                                "mira, listwise, errorllm+listwise, consensus, "
                                                                "errorllm+listwise+consensus, self-correction, "
                                                                "din-sql, self-debug, mac-sql"),
    dataset: str = typer.Option("spider-dev", help="the benchmark the predictions answer"),
    pool: list[Path] = typer.Option(None, "--pool", help="real systems' prediction file: the simulated models' "
                                                          "wrong answers and difficulty fit (repeatable; default: "
                                                          "the shared files)"),
    http: bool = typer.Option(False, "--http", help="serve the model over the OpenAI protocol on loopback (as "
                                                    "`sqlmend serve-model` does) and call it there"),
    echo_rate: float = typer.Option(0.1, help="--independent: share of rewrites that change nothing "
                                              "(at most 1 - quality)"),
    judge_accuracy: Optional[float] = typer.Option(None, help="--independent: judge accuracy for every quality "
                                                              "(default: the quality)"),
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
    """Run each model strategy with a stand-in model whose answers are known; pair it with no
    correction and with the default correction (no model).

    With --replay FILE the model is a real system's prediction file: a rewrite is answered with
    the file's SQL for the question (the input stays when it is the same query), and a judge
    trusts that answer (it takes a query for right exactly when it returns its answer's rows).
    Otherwise the model is simulated at each QUALITY: right on question j with a probability
    that follows how hard j is for the real systems (an item-response model over the shared
    files, the file under correction left out; the mean over the questions is QUALITY),
    else a real wrong query of another system; its judge trusts its answer too. --independent
    gives the older model, right on QUALITY of every question alike, a judge right with
    probability QUALITY. A stand-in for a model in a benchmark: never a default.

    Per file, strategy and model: the model's own EX, P(right | original wrong) and P(wrong |
    original right) and its judge's accuracy, on the same questions; fixed, regressed (also
    without the gold-suspect questions), ΔEX, Δ against the default, calls per query, correct
    queries the model was asked to touch and broke, and which check admitted each model rewrite.
    MIRA is measured on the test part of its split (its memory is built from the history part).
    A strategy's first model corrects every question; the next ones only those where it called
    the model (remembered in --out).

    Examples:
      sqlmend bench model-sim --replay din-sql_gpt-4.sql --strategy errorllm --json rows.json
      sqlmend bench model-sim --pred gpt-4_zero-shot.sql --quality 0.2 --quality 0.6 --json rows.json
    """
    from sqlmend.bench.modelsim import (QUALITIES, STRATEGIES, ModelSpec, bench_model_sim as run, by_model,
                                        markdown, pays_from, write_html, write_svgs)
    from sqlmend.data.predictions import shared_prediction_files

    if replay and quality:
        typer.echo("error: --quality is the simulated model's; a replayed model has its own", err=True)
        raise typer.Exit(2)
    if replay:
        models = [ModelSpec("replay", files=tuple(str(f) for f in replay))]
    else:
        kind = "independent" if independent else "difficulty"
        models = [ModelSpec(kind, q) for q in (quality or QUALITIES)]
    try:
        rows = run(list(pred or shared_prediction_files(dataset)), models,
                   list(strategy or STRATEGIES), out, dataset=dataset, pool_files=list(pool or []) or None, http=http,
                   seed=seed, echo_rate=echo_rate, judge_accuracy=judge_accuracy, workers=workers, sample=sample,
                   model_gate=model_gate, progress=not quiet,
                   on_row=None if quiet else (lambda r: typer.echo(markdown([r]).splitlines()[-1], err=True)),
                   on_skip=lambda note: typer.echo(note, err=True))
    except (SqlmendError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(markdown(rows))
    if replay:
        for s in by_model(rows):
            typer.echo(f"{s['strategy']} with {s['model']} on {s['files']} file(s): Δ vs default mean "
                       f"{s['mean_delta']:+.2f} pp ({s['min_delta']:+.2f} to {s['max_delta']:+.2f}), most gold-clean "
                       f"regressions on one file {s['max_regressed_clean']}")
    else:
        pays = pays_from(rows)
        typer.echo("pays from (beats the default on every file from this quality on): "
                   + ", ".join(f"{k} {'never' if v is None else f'q={v:g}'}" for k, v in pays.items()))
    write_reports(rows, json_out, html, svg, write_html, write_svgs)


def register(app: typer.Typer) -> None:
    """Add ``model-sim`` to ``sqlmend bench``."""
    from sqlmend.cli import bench_app

    bench_app.command("model-sim")(bench_model_sim)
