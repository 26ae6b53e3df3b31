"""``sqlmend sql ...`` (diff, normalize, features) and ``sqlmend bench sql``."""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import asdict

import typer

from sqlmend import sql
from sqlmend.cli.output import QUIET, print_table
from sqlmend.errors import SqlmendError
from sqlmend.paths import data_root
from sqlmend.progress import bar as progress_bar

sql_app = typer.Typer(help="Look at SQL the way sqlmend sees it: edits between two queries, "
                           "normalized form, features.", no_args_is_help=True)

_DB_HELP = "A database (path, postgresql://..., duckdb:///...) whose schema resolves columns."
_DIALECT_HELP = "SQL dialect of the queries (sqlite, postgres, duckdb)."


def _schema(db: str | None):
    if not db:
        return None
    from sqlmend.db import connect

    with connect(db) as conn:
        return conn.schema()


def _fail(e: SqlmendError) -> None:
    msg = f"error: {type(e).__name__}: {e}"
    if getattr(e, "candidates", None):
        msg += f" (closest: {', '.join(e.candidates)})"
    if getattr(e, "line", None):
        msg += f" [line {e.line}, col {e.col}]"
    typer.echo(msg, err=True)
    raise typer.Exit(2)


@sql_app.command("diff")
def diff_cmd(
    a: str = typer.Argument(..., help="The first query (e.g. the wrong SQL)."),
    b: str = typer.Argument(..., help="The second query (e.g. its repair)."),
    db: str = typer.Option(None, "--db", help=_DB_HELP),
    dialect: str = typer.Option("sqlite", help=_DIALECT_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the edits as JSON lines."),
) -> None:
    """Print the edits that turn query A into query B (MIRA §3.2.2; alias-only changes dropped)."""
    try:
        edits = sql.diff(a, b, _schema(db), dialect=dialect)
    except SqlmendError as e:
        _fail(e)
    if as_json:
        for e in edits:
            typer.echo(json.dumps(asdict(e)))
        return
    if not edits:
        typer.echo("no edits: the queries differ at most in aliases, case, quoting or layout")
        return
    for e in edits:
        typer.echo(f"{e.kind:<8} {e.clause:<8} {e.path}")
        if e.before is not None:
            typer.echo(f"    - {e.before}")
        if e.after is not None:
            typer.echo(f"    + {e.after}")
        if e.schema_refs:
            typer.echo(f"    refs: {', '.join(e.schema_refs)}")


@sql_app.command("normalize")
def normalize_cmd(
    query: str = typer.Argument(..., help="The query."),
    db: str = typer.Option(None, "--db", help=_DB_HELP),
    dialect: str = typer.Option("sqlite", help=_DIALECT_HELP),
    pretty: bool = typer.Option(False, help="Indent over several lines."),
) -> None:
    """Print the normalized query: columns qualified, canonical aliases, SQLite's quoted strings."""
    try:
        tree = sql.normalize(query, _schema(db), dialect=dialect)
    except SqlmendError as e:
        _fail(e)
    typer.echo(sql.render(tree, dialect=dialect, pretty=pretty))


@sql_app.command("features")
def features_cmd(
    query: str = typer.Argument(..., help="The query."),
    db: str = typer.Option(None, "--db", help=_DB_HELP),
    dialect: str = typer.Option("sqlite", help=_DIALECT_HELP),
) -> None:
    """Print the tables, columns per clause, literals, aggregates, joins and subqueries of a query."""
    try:
        f = sql.features(sql.parse(query, dialect), _schema(db))
    except SqlmendError as e:
        _fail(e)
    typer.echo("tables:     " + ", ".join(f"{t.name} AS {t.alias} (scope {t.scope})" for t in f.tables))
    for clause, cols in f.columns.items():
        typer.echo(f"{clause + ':':<12}" + ", ".join(c.qualified for c in cols))
    for r in f.literals:
        col = r.column.qualified if r.column else "-"
        case = "case-sensitive" if r.case_sensitive else "ignores case"
        quoted = ' (double-quoted: SQLite reads a string)' if r.quoted_identifier else ""
        typer.echo(f"literal:    {r.text} {r.op or ''} {col} [{r.clause}, {case}]{quoted}")
    for a in f.aggregates:
        typer.echo(f"aggregate:  {a.node.sql()} [{a.clause}]")
    for j in f.joins:
        typer.echo(f"join:       {j.kind} {j.table.name} on {j.on.sql() if j.on is not None else '-'}")
    for s in f.subqueries:
        typer.echo(f"subquery:   {s.kind} in {s.clause}")
    typer.echo(f"distinct: {f.distinct}  limit: {f.limit}  set operations: {', '.join(f.set_operations) or '-'}")


def bench_sql(
    split: str = typer.Option("dev.json", help="Spider split file: dev.json or train_spider.json."),
    data: str = typer.Option(None, "--data-root", help="The folder holding spider/ (default: found)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    quiet: bool = QUIET,
) -> None:
    """Time parse + normalize + features per query over every Spider gold query of a split."""
    from sqlmend.db import connect
    from sqlmend.bench.sql_speed import STAGES, bench_split

    def schema_of(path):
        with connect(path) as conn:
            return conn.schema()

    try:
        spider = data_root(data) / "spider"
        result = bench_split(spider, split, schema_of,
                             progress=lambda items: progress_bar(items, desc=f"sql {split}", unit="q", disable=quiet))
    except SqlmendError as e:
        _fail(e)
    summary = result.summary()
    if as_json:
        typer.echo(json.dumps({"split": split, "queries": result.queries, "failures": len(result.failures),
                               "quoted_strings": result.quoted_strings, "stages": summary}, indent=2))
        return
    print_table(("stage", "mean ms", "median ms", "p95 ms", "max ms"),
                [(stage, *(f"{summary[stage][k]:.2f}" for k in ("mean_ms", "median_ms", "p95_ms", "max_ms")))
                 for stage in STAGES if stage in summary],
                title=f"SQL layer on Spider {split}: {result.queries} gold queries, "
                      f"{len(result.failures)} failures, {result.quoted_strings} double-quoted strings "
                      f"({_dt.date.today().isoformat()})")
    for index, error in result.failures[:20]:
        typer.echo(f"  #{index}: {error}")


def register(app: typer.Typer) -> None:
    """Add ``sqlmend sql`` to the app and ``sql`` to ``sqlmend bench``."""
    from sqlmend.cli import bench_app

    app.add_typer(sql_app, name="sql")
    bench_app.command("sql")(bench_sql)
