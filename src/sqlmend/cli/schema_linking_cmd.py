"""``sqlmend bench schema-linking``: the tables and columns ``schema_for`` finds for a question, against the
gold's, on the warehouse and on each Spider database (:mod:`sqlmend.bench.schema_linking`)."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

import typer

from sqlmend.errors import SqlmendError


def _budgets(text: str) -> tuple[int, ...]:
    try:
        got = tuple(sorted({int(x) for x in text.split(",") if x.strip()}))
    except ValueError:
        raise typer.BadParameter(f"expected budgets in characters such as 1024,4096, got {text!r}") from None
    if not got or got[0] < 256:
        raise typer.BadParameter(f"budgets of at least 256 characters, got {text!r}")
    return got


def bench_schema_linking(
    dataset: str = typer.Option("spider-dev", "--dataset", "-d", help="spider-train to develop on, spider-dev to report"),
    where: list[str] = typer.Option(["warehouse", "single"], "--where",
                                    help="warehouse (every Spider database as a schema of one PostgreSQL database) "
                                         "and/or single (each question's own database); repeat for both; none for "
                                         "the time and model-sim rows alone"),
    budgets: str = typer.Option("1024,2048,4096,8192", help="budgets of the text, in characters"),
    limit: int = typer.Option(None, help="questions at most (a seeded sample; default: all)"),
    pred: list[Path] = typer.Option(None, "--pred", help="prediction files whose failing queries are the drafts "
                                                         "(repeatable; default: the shared files of the dataset)"),
    embedder: bool = typer.Option(True, "--embedder/--no-embedder",
                                  help="also the rows that need MiniLM (schema_for+embedder, minilm)"),
    sizes: str = typer.Option("10000", help="generated schemas' table counts for the time rows ('' for none)"),
    size_engine: list[str] = typer.Option(["sqlite"], "--size-engine",
                                          help="engines of the generated schema: sqlite and/or postgres"),
    model_sim: bool = typer.Option(False, "--model-sim", help="also bench model-sim rows with the prompts' schemas "
                                                              "scoped against whole"),
    sim_pred: Path = typer.Option(None, help="--model-sim: the file corrected (default: gpt-4_zero-shot.sql)"),
    sim_replay: Path = typer.Option(None, help="--model-sim: the replayed model (default: din-sql_gpt-4.sql)"),
    sim_scoped: int = typer.Option(1024, help="--model-sim: the prompts' schemas scoped to this many characters"),
    sim_sample: int = typer.Option(200, help="--model-sim: a seeded sample of N questions"),
    seed: int = typer.Option(0, help="seed of the sample"),
    workers: int = typer.Option(2, help="evaluator processes"),
    out: Path = typer.Option(Path("runs/bench-schema-linking"), "--out", "-o",
                             help="report folder (report.json, report.md)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress lines"),
) -> None:
    """Recall of the gold's tables and columns in schema_for's answer at each budget, with and without a draft
    (the gold without its schema; each shared file's failing query), beside BM25 over names, MiniLM over
    columns and the whole schema; schema_for's time on the warehouse and on a generated schema of 10,000
    tables; with --model-sim, bench model-sim rows with the prompts' schemas scoped against whole.

    Example: sqlmend bench schema-linking --dataset spider-dev --model-sim
    """
    from sqlmend.bench import schema_linking as bench
    from sqlmend.data.datasets import load_dataset
    from sqlmend.data.predictions import shared_prediction_files

    bad = [w for w in where if w not in ("warehouse", "single", "none")]
    if bad:
        typer.echo(f"error: unknown --where {', '.join(bad)}; known: warehouse, single, none", err=True)
        raise typer.Exit(2)
    chosen = _budgets(budgets)
    counts = tuple(int(x) for x in sizes.split(",") if x.strip()) if sizes.strip() else ()
    echo = (lambda line: None) if quiet else (lambda line: typer.echo(line, err=True))
    out.mkdir(parents=True, exist_ok=True)
    report: dict = {"dataset": dataset, "budgets": list(chosen), "seed": seed, "limit": limit}
    try:
        ds = load_dataset(dataset)
        files = list(pred or (shared_prediction_files(dataset) if dataset == "spider-dev" else []))
        if "warehouse" in where:
            report["warehouse"] = bench.bench_warehouse_linking(ds, files, limit, seed, chosen, embedder, workers, echo)
        if "single" in where:
            report["single"] = bench.bench_single_linking(ds, files, limit, seed, chosen, embedder, workers, echo)
        if counts:
            report["sizes"] = bench.bench_sizes(counts, out / "schemas", engines=tuple(size_engine), echo=echo)
        if model_sim:
            shared = {p.name: p for p in shared_prediction_files("spider-dev")}
            report["model_sim"] = bench.model_sim_rows(sim_pred or shared["gpt-4_zero-shot.sql"],
                                                       sim_replay or shared["din-sql_gpt-4.sql"],
                                                       ["errorllm", "consensus"], out / "model-sim", sim_scoped,
                                                       sim_sample, workers, echo)
    except (SqlmendError, RuntimeError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None
    report["date"] = _dt.date.today().isoformat()
    text = bench.markdown(report)
    (out / "report.json").write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
    (out / "report.md").write_text(text, encoding="utf-8")
    typer.echo(f"{report['date']}\n\n{text}")


def register(app: typer.Typer) -> None:
    """Add ``schema-linking`` to ``sqlmend bench``."""
    from sqlmend.cli import bench_app

    bench_app.command("schema-linking")(bench_schema_linking)
