"""``sqlmend review``, ``sqlmend report`` and ``sqlmend bench review``: review a correction run, report on it.

``sqlmend review RUN_DIR --reviewer NAME`` serves the review pages on
127.0.0.1; ``sqlmend report RUN_DIR`` prints the run's Markdown report and, with
``--html``, writes a self-contained HTML report with plots; ``sqlmend bench
review`` replays a scripted reviewer (the gold) on MIRA's history split and
compares the memory it builds with ``sqlmend memory build``'s.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from sqlmend.cli.output import QUIET
from sqlmend.errors import SqlmendError

_STORE_HELP = ("repair memory folder the build writes to, as `sqlmend correct --memory-store` reads it, "
               "or postgresql://... shared with service replicas (wins over --memory-namespace; env "
               "SQLMEND_MEMORY_STORE)")
_NS_HELP = "repair memory namespace under the cache folder (default 'default'; env SQLMEND_MEMORY_NAMESPACE)"


def memory_folder(store: str | None, namespace: str | None) -> tuple[Path | str, str]:
    """The memory folder (or PostgreSQL URL) and namespace that ``sqlmend correct`` with the same
    flags reads (the memory stage decides)."""
    from sqlmend.memory.stage import MemoryStage

    stage = MemoryStage(MemoryStage.Settings(store=str(store) if store else None, namespace=namespace))
    return stage.folder, stage.namespace


def _open(run_dir: Path, dataset: str | None, data_root: str | None) -> Any:
    from sqlmend.review.run import Run

    try:
        return Run.load(run_dir, dataset, data_root)
    except SqlmendError as e:
        typer.secho(f"error: {e}", err=True, fg=typer.colors.RED)
        raise typer.Exit(2) from None


def review(
    run_dir: Path = typer.Argument(..., help="a run folder written by `sqlmend correct --out`"),
    reviewer: str = typer.Option(..., "--reviewer", help="your name, written with every decision"),
    host: str = typer.Option("127.0.0.1", help="address to bind (keep the default: the pages change state)"),
    port: int = typer.Option(8765, help="port"),
    dataset: Optional[str] = typer.Option(None, help="the run's dataset when it has no run.json"),
    data_root: Optional[str] = typer.Option(None, help="folder holding spider/ (default: run.json's, else found)"),
    memory_store: Optional[str] = typer.Option(None, "--memory-store", metavar="DIR|URL", help=_STORE_HELP),
    memory_namespace: Optional[str] = typer.Option(None, "--memory-namespace", metavar="NAME", help=_NS_HELP),
    model: Optional[str] = typer.Option(None, help="'local' or an llm config file: MIRA's judge and repair "
                                                   "recovery for the build (default: mechanical items only)"),
    verdicts: bool = typer.Option(True, help="evaluate original and corrected SQL against the gold at start "
                                             "(filter by fixed / regressed)"),
    timeout: float = typer.Option(5.0, help="seconds per query shown on a page"),
) -> None:
    """Review a correction run in the browser: accept, reject or edit each correction, then build memory.

    Decisions go to RUN_DIR/reviews.jsonl (who, when, what). "Build memory" turns the accepted
    and edited corrections into confirmed corrections and runs MIRA's offline phase into the memory
    store; a later `sqlmend correct` with the same --memory-store / --memory-namespace uses the items.

    Example: sqlmend review runs/a --reviewer ana --memory-store mem/   (then open http://127.0.0.1:8765)
    """
    import uvicorn

    from sqlmend.evaluation.evaluate import evaluate_run
    from sqlmend.memory.store import shown
    from sqlmend.review.app import create_app

    run = _open(run_dir, dataset, data_root)
    if verdicts and run.has_gold:
        typer.echo(f"evaluating {len(run.items)} items against the gold ...", err=True)
        evaluate_run(run)
    cfg = None
    if model:
        from sqlmend import llm

        cfg = llm.LLMConfig.local() if model == "local" else llm.LLMConfig.load(model)
    folder, namespace = memory_folder(memory_store, memory_namespace)
    app = create_app(run, reviewer, folder, namespace=namespace, judge=cfg.resolve("judge") if cfg else None,
                     embedder=cfg.resolve("embedder") if cfg else None,
                     recovery=cfg.resolve("recovery") if cfg else None, timeout=timeout,
                     allowed_hosts=sorted({host, "127.0.0.1", "localhost", "::1", "[::1]"}))
    if host not in ("127.0.0.1", "localhost", "::1"):
        typer.secho(f"warning: serving on {host}: whoever reaches this address can record decisions as "
                    f"{reviewer} and build memory", err=True, fg=typer.colors.YELLOW)
    typer.echo(f"reviewing {run_dir} ({len(run.items)} items) as {reviewer}: http://{host}:{port}/ "
               f"(memory store {shown(folder)})", err=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")


def report(
    run_dir: Path = typer.Argument(..., help="a run folder written by `sqlmend correct --out`"),
    html: Optional[Path] = typer.Option(None, "--html", help="also write a self-contained HTML report here"),
    dataset: Optional[str] = typer.Option(None, help="the run's dataset when it has no run.json"),
    data_root: Optional[str] = typer.Option(None, help="folder holding spider/"),
    workers: int = typer.Option(2, help="evaluation worker processes"),
    timeout: float = typer.Option(30.0, help="seconds per query"),
) -> None:
    """Report on a correction run: EX before/after by difficulty, fixed/regressed by stage and rule,
    findings by error type, latency and calls/tokens per query (Markdown; --html for plots).

    Example: sqlmend report runs/a --html runs/a/report.html
    """
    from sqlmend.evaluation.evaluate import evaluate_run
    from sqlmend.review.report import run_markdown, run_report, write_html

    run = _open(run_dir, dataset, data_root)
    before, after = evaluate_run(run, workers=workers, timeout=timeout) if run.has_gold else (None, None)
    data = run_report(run, before, after)
    typer.echo(run_markdown(data))
    if html is not None:
        write_html(html, data)
        typer.echo(f"wrote {html}", err=True)


def bench_review(
    pred: Path = typer.Option(..., exists=True, help="a prediction file of the dataset"),
    dataset: str = typer.Option("spider-dev", help="dataset name"),
    out: Path = typer.Option(Path("runs/bench-review"), "--out", "-o",
                             help="work folder, emptied (run, two stores, result.json)"),
    fraction: float = typer.Option(0.25, help="history share per database (MIRA §4.1)"),
    seed: int = typer.Option(0, help="split seed"),
    stages: str = typer.Option("static,guard", help="stages of the correction run that is reviewed"),
    workers: int = typer.Option(2, help="evaluation worker processes"),
    accept_matching: bool = typer.Option(False, help="accept a correction whose result matches the gold's "
                                                     "instead of editing it to the gold"),
    databases: Optional[str] = typer.Option(None, help="comma-separated database ids: only their history"),
    quiet: bool = QUIET,
) -> None:
    """Scripted review with the gold as the reviewer, on MIRA's history split; compare with `memory build`.

    Corrects the history part of the split (OUT/run), lets the gold decide every item (edit with the gold
    where the original is wrong - or, with --accept-matching, accept a correction whose result already
    matches - and reject a change of a correct original) into OUT/run/reviews.jsonl, builds memory from
    those decisions exactly as the review page's "Build memory" does (OUT/store-review), builds memory
    from the same split as `sqlmend memory build` does (OUT/store-build), and compares the item sets.

    Example: sqlmend bench review --pred din-sql_gpt-4.sql --out runs/bench-review
    """
    from sqlmend.bench.review import bench_review as run_bench

    dbs = [d.strip() for d in databases.split(",") if d.strip()] if databases else None
    try:
        result = run_bench(pred, dataset, out, fraction, seed, [s.strip() for s in stages.split(",") if s.strip()],
                           workers, accept_matching, dbs, progress=not quiet)
    except SqlmendError as e:
        typer.secho(f"error: {e}", err=True, fg=typer.colors.RED)
        raise typer.Exit(2) from None
    (out / "result.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    typer.echo(json.dumps({k: v for k, v in result.items() if k != "items"}, indent=1))


def register(app: typer.Typer) -> None:
    """Add ``review`` and ``report`` to the app, and ``review`` to ``sqlmend bench``."""
    from sqlmend.cli import bench_app

    app.command("review")(review)
    app.command("report")(report)
    bench_app.command("review")(bench_review)
