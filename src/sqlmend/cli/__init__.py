"""The ``sqlmend`` command line.

Each command group lives in its own module of this package and exposes
``register(app)``; this module only assembles them. Command modules only parse
options, call one library function (benchmark runners live in ``sqlmend.bench``)
and print (tables through :func:`sqlmend.cli.output.print_table`).
"""

from __future__ import annotations

import importlib

import typer

from sqlmend import __version__

app = typer.Typer(
    name="sqlmend",
    help=(
        "Correct the SQL written by text-to-SQL systems.\n\n"
        "sqlmend decides whether and where a produced SQL is wrong (static rules, "
        "an error-token detector, a repair memory), repairs it, and returns the "
        "original when nothing is proven wrong. Every rewrite passes the "
        "validate-or-retain guard."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: ``sqlmend bench ...``: benchmark commands, added to by several command modules.
bench_app = typer.Typer(
    help="Measure speed and quality on benchmark data (numbers for docs/benchmarks.md).",
    no_args_is_help=True,
)
app.add_typer(bench_app, name="bench")

# Command modules, in the order their commands appear in --help.
# Each exposes ``register(app)``; bench commands use ``sqlmend.cli.bench_app``.
COMMAND_MODULES = [
    "sqlmend.cli.db_cmd",
    "sqlmend.cli.sql_cmd",
    "sqlmend.cli.correct_cmd",
    "sqlmend.cli.serve_cmd",
    "sqlmend.cli.mcp_cmd",
    "sqlmend.cli.memory_cmd",
    "sqlmend.cli.eval_cmd",
    "sqlmend.cli.rules_cmd",
    "sqlmend.cli.schema_cmd",
    "sqlmend.cli.dialects_cmd",
    "sqlmend.cli.models_cmd",
    "sqlmend.cli.detect_cmd",
    "sqlmend.cli.review_cmd",
    "sqlmend.cli.search_cmd",
    "sqlmend.cli.faults_cmd",
    "sqlmend.cli.modelsim_cmd",
    "sqlmend.cli.alternatives_cmd",
    "sqlmend.cli.fuzz_cmd",
    "sqlmend.cli.names_cmd",
    "sqlmend.cli.warehouse_cmd",
    "sqlmend.cli.schema_linking_cmd",
    "sqlmend.cli.soak_cmd",
]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sqlmend {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """Correct the SQL written by text-to-SQL systems."""


for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def main() -> None:
    app()
