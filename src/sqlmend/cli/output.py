"""How the command line prints: tables (rich on a terminal, Markdown otherwise) and the -q/--quiet flag.

One grammar for every command: a short flag means one long option everywhere (``-q`` is ``--quiet``,
``-o`` is ``--out``; tests/test_cli_grammar.py walks the command tree and fails on a clash). Progress
bars go through :mod:`sqlmend.progress` (drawn on a terminal only).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import typer

#: ``-q/--quiet`` of every command that shows progress bars.
QUIET = typer.Option(False, "--quiet", "-q", help="No progress bars (results are still printed).")
#: ``--require-read-only-login`` of every command that opens databases and may warn of their login
#: (``correct``, ``check``, ``eval``, ``serve``, ``mcp``; :func:`sqlmend.db.account.admit`).
REQUIRE_READ_ONLY = typer.Option(
    False, "--require-read-only-login", envvar="SQLMEND_REQUIRE_READ_ONLY_LOGIN", show_envvar=True,
    help="refuse a database whose login may do more than read (a superuser, write grants, a writable file; "
         "`sqlmend db check` shows it); without it such a login is warned about once, unless sqlmend's own "
         "lock holds (a SQLite file, opened read-only with an authorizer)")


def markdown_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None) -> str:
    """A Markdown table (``|`` in cells escaped), with the title as a line above it.

    >>> print(markdown_table(["a", "b"], [[1, "x|y"]], title="T"))
    T
    <BLANKLINE>
    | a | b |
    | --- | --- |
    | 1 | x\\|y |
    """
    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")

    lines = ([title, ""] if title else []) + ["| " + " | ".join(map(cell, columns)) + " |",
                                            "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def print_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None,
                markup: bool = False) -> None:
    """Print a table on stdout: a rich table on a terminal, Markdown when stdout is a file or pipe.

    Args:
        columns: the column heads.
        rows: the cells, one sequence per row (converted with ``str``).
        title: a title above the table.
        markup: the cells hold rich markup (``[red]...[/red]``); stripped for Markdown.
    """
    if not sys.stdout.isatty():
        if markup:
            from rich.text import Text

            rows = [[Text.from_markup(str(v)).plain for v in row] for row in rows]
        typer.echo(markdown_table(columns, rows, title))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*(str(v) for v in row))
    Console(markup=markup).print(table)


def refuse_dev(dataset: str, what: str = "this check runs") -> None:
    """Exit 2 with a clear message when a training-only command is given a dev or test set."""
    if "dev" in dataset or "test" in dataset:
        typer.secho(f"refusing {dataset}: {what} on training questions only", err=True, fg="red")
        raise typer.Exit(2)


def write_reports(items: Sequence[Any], json_out: Path | None, html: Path | None, svg: Path | None,
                  write_html: Callable[[Path, Any], Path], write_svgs: Callable[[Path, Any], Iterable[Path]]) -> None:
    """Write a bench command's results where asked: ``--json`` (each item's ``to_dict()``), ``--html``
    and ``--svg`` (the bench's own writers), naming each file written on stderr."""
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps([it.to_dict() for it in items], indent=1) + "\n", encoding="utf-8")
    if html is not None:
        typer.echo(f"wrote {write_html(html, items)}", err=True)
    if svg is not None:
        for path in write_svgs(svg, items):
            typer.echo(f"wrote {path}", err=True)
