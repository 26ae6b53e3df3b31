"""``sqlmend schema``: the tables and columns a question needs in a database (:meth:`sqlmend.api.Corrector.schema_for`,
the MCP tool ``find_schema``, the service's ``POST /schema``)."""

from __future__ import annotations

import typer

from sqlmend.errors import SqlmendError


def schema_cmd(
    db: str = typer.Option(..., "--db", help="Database: a .sqlite path, postgresql://..., duckdb:///... or mysql://..."),
    question: str = typer.Option(..., "--question", help="The natural-language question."),
    sql_text: str = typer.Option(None, "--sql", "-s", help="A draft query for it (never run; a failing one too: "
                                                           "its names, invented ones included, are evidence)."),
    budget: int = typer.Option(4096, "--budget", help="Characters of the text at most (256 to 1048576)."),
    model: list[str] = typer.Option(None, "--model", help="STAGE=ENDPOINT (repeatable): embedder=local-minilm adds "
                                                          "the embedder's evidence (sqlmend models)."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole answer as JSON (the MCP tool's)."),
) -> None:
    """Print the tables and columns a question needs, best first, with their joins and the stored values its
    words match, within --budget characters: what to put in a prompt (or read) of a database too big to
    send whole.

    Example: sqlmend schema --db warehouse_url --question "Which singers are from France?" --budget 2048
    """
    from sqlmend.api import Corrector
    from sqlmend.types import json_text

    try:
        with Corrector(db, stages="guard", models=list(model) if model else None) as fixer:
            found = fixer.schema_for(question, sql_text, budget)
            dialect = fixer.dialect
            name = fixer.db_id
    except SqlmendError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    if as_json:
        typer.echo(json_text({"database": name, "dialect": dialect, **found.to_dict()}))
    else:
        typer.echo(found.text)


def register(app: typer.Typer) -> None:
    """Add ``schema`` to the command line."""
    app.command("schema")(schema_cmd)
