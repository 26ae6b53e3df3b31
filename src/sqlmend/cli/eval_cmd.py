"""``sqlmend eval``, ``sqlmend convert`` and ``sqlmend bench eval``: thin wrappers over :mod:`sqlmend.evaluation`."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from sqlmend.bench.speed import time_evaluation
from sqlmend.cli.output import REQUIRE_READ_ONLY
from sqlmend.data import Dataset, load_dataset, load_predictions, read_tasks, write_predictions, write_tasks
from sqlmend.data.datasets import TASK_FORMATS
from sqlmend.data.predictions import PRED_FORMATS
from sqlmend.errors import ConfigError, DatasetError
from sqlmend.evaluation import compare, eval_markdown, evaluate, paired_markdown, write_json, write_markdown
from sqlmend.evaluation.executor import QueryPool
from sqlmend.evaluation.suspects import read_suspects

_DATASET_HELP = ("A named dataset (spider-dev, spider-train, bird-dev, nl2sql-bugs) resolved under the "
                 "data root, or the path of a task file.")


def _fail(error: Exception) -> None:
    typer.secho(f"error: {error}", err=True, fg=typer.colors.RED)
    raise typer.Exit(2)


def _load(dataset: str, data_root: Optional[Path], db_root: Optional[Path]) -> Dataset:
    return load_dataset(dataset, data_root=data_root, db_root=db_root)


def eval_command(
    dataset: str = typer.Option(..., "--dataset", "-d", help=_DATASET_HELP),
    pred: Path = typer.Option(..., "--pred", "-p", help="Prediction file (Spider lines, BIRD JSON or sqlmend JSONL)."),
    against: Optional[Path] = typer.Option(None, "--against", "-a",
                                           help="A second prediction file (the 'after'): print the paired "
                                                "fixed/regressed report of PRED -> AGAINST."),
    pred_format: str = typer.Option("auto", "--pred-format", help=f"auto or one of {', '.join(PRED_FORMATS)}."),
    data_root: Optional[Path] = typer.Option(None, "--data-root", help="Folder holding spider/ (default: found)."),
    db_root: Optional[Path] = typer.Option(None, "--db-root", help="Databases folder <db_id>/<db_id>.sqlite."),
    timeout: float = typer.Option(30.0, "--timeout", help="Per-query time limit in seconds."),
    workers: int = typer.Option(2, "--workers", "-j", min=1, help="Worker processes."),
    suspects: Optional[Path] = typer.Option(None, "--suspects",
                                            help="Gold-suspect question ids (one per line, JSON list or JSONL): "
                                                 "figures are also given without them."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the full report (per question) as JSON."),
    md_out: Optional[Path] = typer.Option(None, "--markdown", help="Write the Markdown report to this file."),
    html_out: Optional[Path] = typer.Option(None, "--html", help="Write a self-contained HTML report with plots "
                                                                 "(EX by difficulty, fixed/regressed, latency)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the gold-result cache."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    require_read_only_login: bool = REQUIRE_READ_ONLY,
) -> None:
    """Execution accuracy of a prediction file (set rule and order-aware rule), or a paired before/after report.

    Every question gets a verdict: correct, wrong, pred_error, pred_timeout or gold_error (excluded
    and counted).

    Example: sqlmend eval --dataset spider-dev --pred din-sql_gpt-4.sql --against fixed.sql
    """
    from sqlmend.db.account import admit, target_logins

    try:
        ds = _load(dataset, data_root, db_root)
        # the evaluator opens the dataset's database files (sqlmend's own lock: read-only, an authorizer)
        admit(target_logins((t.db_id, str(path)) for t in ds.tasks if (path := ds.db_path(t.db_id))),
              require_read_only_login)
        suspect_ids = read_suspects(suspects) if suspects else []
        reports = []
        with QueryPool(workers=workers, timeout=timeout) as pool:  # one start-up for both files
            for path in [pred] + ([against] if against else []):
                predictions = load_predictions(path, ds, pred_format)
                reports.append(evaluate(ds, predictions, timeout=timeout, suspect_ids=suspect_ids,
                                        use_cache=not no_cache, progress=not quiet, label=path.name, pool=pool))
    except (DatasetError, ConfigError) as e:
        _fail(e)
        return
    text = "\n".join(eval_markdown(r) for r in reports)
    data: object = reports[0]
    if against:
        paired = compare(reports[0], reports[1], suspect_ids)
        text += "\n" + paired_markdown(paired)
        data = {"before": reports[0].to_dict(), "after": reports[1].to_dict(), "paired": paired.to_dict()}
    typer.echo(text)
    if json_out:
        write_json(json_out, data)
    if md_out:
        write_markdown(md_out, text)
    if html_out:
        from sqlmend.review.report import eval_report, write_html

        write_html(html_out, eval_report(reports[0], reports[1] if against else None,
                                         paired=paired if against else None))


def convert_command(
    source: Path = typer.Argument(..., help="The file to convert."),
    target: Path = typer.Argument(..., help="The file to write."),
    to: str = typer.Option("jsonl", "--to", help="Output format: spider, bird or jsonl."),
    from_: str = typer.Option("auto", "--from", help="Input format (auto: guessed from the file)."),
    dataset: Optional[str] = typer.Option(None, "--dataset", "-d",
                                          help="Convert a PREDICTION file of this dataset "
                                               f"({', '.join(PRED_FORMATS)}). Without it SOURCE is a task file "
                                               f"({', '.join(TASK_FORMATS)})."),
    data_root: Optional[Path] = typer.Option(None, "--data-root", help="Folder holding spider/ (default: found)."),
) -> None:
    """Convert prediction files (with --dataset) or task files between Spider, BIRD, NL2SQL-Bugs and sqlmend JSONL.

    Predictions: sqlmend convert preds.sql preds.jsonl --dataset spider-dev

    Tasks: sqlmend convert dev.json dev.jsonl
    """
    try:
        if dataset:
            ds = _load(dataset, data_root, None)
            n = write_predictions(target, load_predictions(source, ds, from_), ds, to)
        else:
            tasks, labels = read_tasks(source, from_)
            n = write_tasks(target, Dataset(name=source.stem, tasks=tasks, labels=labels), to)
    except (DatasetError, ConfigError) as e:
        _fail(e)
        return
    typer.echo(f"wrote {n} {'predictions' if dataset else 'tasks'} to {target} ({to})")


def bench_eval_command(
    files: Optional[list[Path]] = typer.Argument(None, help="Prediction files (default: every *.sql in "
                                                            "<data root>/predictions/<dataset>)."),
    dataset: str = typer.Option("spider-dev", "--dataset", "-d", help=_DATASET_HELP),
    data_root: Optional[Path] = typer.Option(None, "--data-root", help="Folder holding spider/ (default: found)."),
    timeout: float = typer.Option(30.0, "--timeout", help="Per-query time limit in seconds."),
    workers: int = typer.Option(2, "--workers", "-j", min=1, help="Worker processes."),
    plain: bool = typer.Option(True, "--plain/--no-plain", help="Also time a single-process sqlite3 loop."),
    repeat: int = typer.Option(1, "--repeat", "-r", min=1,
                               help="Runs of each way, taking turns; the best run of each is reported."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write timings and counts as JSON."),
) -> None:
    """Time the evaluator on prediction files: gold cache cold, warm, and single-process loops.

    The loops run gold and prediction per question with the same time limit, one through plain
    sqlite3, one through sqlmend.db; every way's correct counts are printed, so they check each other.
    Wall-clock seconds are printed with the CPU seconds (worker processes included) of the same run.
    """
    from sqlmend.data.predictions import shared_prediction_files

    try:
        ds = _load(dataset, data_root, None)
        files = files or shared_prediction_files(dataset, data_root)
        res = time_evaluation(ds, files, timeout=timeout, workers=workers, plain=plain, repeat=repeat)
    except (DatasetError, ConfigError) as e:
        _fail(e)
        return
    lines = [f"{len(res.files)} files, {res.predictions} predictions, {dataset}, timeout {timeout:g}s, "
             f"{workers} workers, best of {res.repeat}", "",
             "| way | seconds | CPU seconds | correct per file |", "| --- | --- | --- | --- |"]
    ways = {"cold": "evaluator, gold cache cold", "warm": "evaluator, gold cache warm",
            "plain": "one process, plain sqlite3", "plain_db": "one process, sqlmend.db"}
    for way, what in ways.items():
        if way in res.counts:
            counts = ", ".join(f"{n}: {c}" for n, c in res.counts[way].items())
            lines.append(f"| {way} ({what}) | {getattr(res, way):.2f} | {res.cpu[way]:.2f} | {counts} |")
    if plain:
        lines += ["", f"cold / plain sqlite3 = {res.cold / res.plain:.2f}x; warm / plain sqlite3 = "
                      f"{res.warm / res.plain:.2f}x; one-process sqlmend.db / plain sqlite3 = "
                      f"{res.plain_db / res.plain:.2f}x"]
    typer.echo("\n".join(lines))
    if json_out:
        write_json(json_out, res)


def register(app: typer.Typer, bench: typer.Typer | None = None) -> None:
    """Add ``eval`` and ``convert`` to ``app`` and ``eval`` to the bench sub-app.

    Args:
        app: the root ``sqlmend`` app.
        bench: the ``sqlmend bench`` app (default: :data:`sqlmend.cli.bench_app`).
    """
    if bench is None:
        from sqlmend.cli import bench_app as bench
    app.command("eval")(eval_command)
    app.command("convert")(convert_command)
    bench.command("eval")(bench_eval_command)
