"""``sqlmend bench fuzz``: mutated queries, odd questions and malformed files through the whole
correction path (:mod:`sqlmend.stress.fuzz`)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from sqlmend.cli.output import QUIET
from sqlmend.errors import SqlmendError


def bench_fuzz(
    examples: int = typer.Option(1000, help="examples to run"),
    seed: int = typer.Option(0, help="the run's seed: the same seed gives the same examples and counts"),
    out: Path = typer.Option(Path("runs/bench-fuzz"), "--out", "-o",
                             help="report folder (report.json; work/ holds the private database copies)"),
    timeout: float = typer.Option(2.0, help="seconds of work per SQL execution, in every stage"),
    http_every: int = typer.Option(10, help="one query example in this many through the HTTP service (0: none)"),
    file_every: int = typer.Option(20, help="one example in this many a malformed batch file (0: none)"),
    data_root: str = typer.Option(None, help="folder holding spider/ (without it: the example database only)"),
    quiet: bool = QUIET,
) -> None:
    """Fuzz the correction path: Spider golds and predictions mutated (tokens dropped, swapped,
    duplicated; quotes and parentheses unbalanced; other dialects' keywords; comments, unicode,
    NUL, control characters; very long and deeply nested queries; several statements; writes),
    odd questions and evidence, through the Python API's stages and the HTTP service, and
    malformed prediction and task files through the batch readers.

    Prints the failures by kind (unhandled exception or untyped error, changed database file,
    item past its counted work limit, output that is neither the input nor a read-only query
    that runs) and ends with one line: examples N, unhandled U, changed databases C, past limit
    L, seconds S. Exit 1 when anything failed.

    Example: sqlmend bench fuzz --examples 20000 --seed 0
    """
    from sqlmend.stress.fuzz import markdown, run_fuzz
    from sqlmend.paths import data_root as find_data_root
    from sqlmend.progress import bar

    try:
        spider = find_data_root(data_root) / "spider"
    except SqlmendError:
        spider = None
    with bar(total=examples, desc="fuzz", unit="ex", disable=quiet) as progress:
        report = run_fuzz(examples, seed, out / "work", spider if spider and spider.is_dir() else None,
                          timeout=timeout, http_every=http_every, file_every=file_every,
                          progress=lambda: progress.update(1))
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report.to_dict(), indent=1, ensure_ascii=True) + "\n")
    typer.echo(markdown(report))
    if not report.ok():
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``fuzz`` to ``sqlmend bench``."""
    from sqlmend.cli import bench_app

    bench_app.command("fuzz")(bench_fuzz)
