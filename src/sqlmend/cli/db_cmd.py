"""``sqlmend db ...`` (info, check), ``sqlmend bench values`` and ``sqlmend bench engines``."""

from __future__ import annotations

import datetime as _dt
import json
import os
from dataclasses import asdict
from pathlib import Path

import typer
from rich.console import Console

from sqlmend.cli.output import QUIET, markdown_table, print_table
from sqlmend.errors import SqlmendError
from sqlmend.paths import data_root
from sqlmend.progress import bar as progress_bar

_console = Console(soft_wrap=True)
db_app = typer.Typer(help="Look at a database the way sqlmend sees it: schema, keys, value index, and what "
                          "its login may do.", no_args_is_help=True)

_DATA_HELP = "Benchmark data folder (the one holding spider/); default: $SQLMEND_DATA or ../shared/data."


def _resolve(target: str, root: str | None) -> str:
    """A path or URL as given, else a Spider database id looked up under the data root."""
    if "://" in target or os.path.exists(target):
        return target
    from sqlmend.db import benchmark_db

    return str(benchmark_db(data_root(root) / "spider" / "database", target))


@db_app.command("info")
def info_cmd(
    target: str = typer.Argument(..., metavar="DB",
                                 help="A database: path to a .sqlite/.duckdb file, postgresql://..., "
                                      "duckdb:///..., mysql://..., or a Spider db_id (e.g. concert_singer)."),
    data: str = typer.Option(None, "--data-root", help=_DATA_HELP),
    values: bool = typer.Option(True, "--values/--no-values", help="Build (or load) the value index "
                                                                    "and show its statistics."),
    as_json: bool = typer.Option(False, "--json", help="Print the schema and statistics as JSON."),
) -> None:
    """Print a database's tables, columns, keys and row counts, and its value-index statistics."""
    from sqlmend.db import connect

    try:
        with connect(_resolve(target, data)) as db:
            schema = db.schema()
            index = db.value_index() if values else None
            stats = index.stats() if index else None
            largest = sorted(((len(index.values(t, c)), t, c) for t, c in index.columns()),
                             reverse=True)[:5] if index else []
            dialect, name = db.dialect, db.target
    except SqlmendError as e:
        typer.echo(f"error: {type(e).__name__}: {e}", err=True)
        raise typer.Exit(2) from None
    if as_json:
        typer.echo(json.dumps({"target": name, "schema": asdict(schema), "value_index": stats}, default=str))
        return
    _console.print(f"[bold]{name}[/bold] ({dialect}): {len(schema.tables)} tables, "
                   f"{len(schema.foreign_keys)} foreign keys")
    for t in schema.tables:
        fks = {c: f"→ {fk.ref_table}.{r}" for fk in t.foreign_keys for c, r in zip(fk.columns, fk.ref_columns)}
        commented = any(c.comment for c in t.columns)
        print_table(("column", "type", "key", "not null") + (("comment",) if commented else ()),
                    [(c.name, c.type, " ".join(x for x in ("PK" if c.name in t.primary_key else "",
                                                          fks.get(c.name, "")) if x),
                      "yes" if c.not_null else "") + ((c.comment,) if commented else ()) for c in t.columns],
                    title=f"{t.name}{f' ({t.kind})' if t.kind != 'table' else ''} — {t.row_count} rows"
                          + (f" — {t.comment}" if t.comment else ""))
    if stats is not None:
        source = "loaded from cache" if stats["from_cache"] else "built now"
        _console.print(f"[bold]value index[/bold] ({source}): {stats['columns']} text columns, "
                       f"{stats['values']} distinct values, {stats['partial_columns']} partial columns, "
                       f"build {stats['build_seconds']:.3f}s")
        for n, t, c in largest:
            _console.print(f"  {t}.{c}: {n} distinct values")


@db_app.command("check")
def check_cmd(
    target: str = typer.Argument(..., metavar="DB",
                                 help="A database: postgresql://USER@HOST/DB, mysql://USER:PASS@HOST/DB, a "
                                      ".sqlite/.duckdb file, or a Spider db_id."),
    data: str = typer.Option(None, "--data-root", help=_DATA_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON."),
) -> None:
    """Print what the database's login may do beyond reading: "read-only", or
    what it may do and "may write" ("superuser: may write" for an admin login).

    PostgreSQL: superuser, the predefined roles that act on the server
    (pg_write_all_data, pg_read_server_files, pg_signal_backend, ...),
    CREATEROLE / CREATEDB / REPLICATION, writes on any table, CREATE on any
    schema. MySQL / MariaDB: every grant beyond SELECT. SQLite / DuckDB:
    whether this process may write the file. sqlmend reads only whatever the
    login, but a read-only login is the surer lock: correct, check, eval,
    serve and mcp warn once of a login that may write (not of a SQLite file,
    which sqlmend opens read-only with an authorizer: this line says so) and
    refuse it with --require-read-only-login. Exit status: 0 read-only, 1 may
    write, 2 the database cannot be opened.

    Example: sqlmend db check postgresql://reader@db.internal/shop
    """
    from sqlmend.db import connect
    from sqlmend.db.account import check_login
    from sqlmend.db.base import mask_password

    try:
        with connect(_resolve(target, data)) as db:
            login = check_login(db, name=mask_password(db.target))
    except SqlmendError as e:
        typer.echo(f"error: {type(e).__name__}: {e}", err=True)
        raise typer.Exit(2) from None
    if as_json:
        typer.echo(json.dumps({**login.to_dict(), "target": login.name}))
    else:
        typer.echo(f"{login.name} ({login.engine}, login {login.user or '?'})")
        typer.echo(login.summary)
        for power in login.powers:
            typer.echo(f"  - {power}")
        if login.may_write and login.own_lock:
            typer.echo(f"sqlmend's own lock holds: {login.own_lock} (no warning on each run; "
                       "--require-read-only-login still refuses this login)")
    if login.may_write:
        raise typer.Exit(1)


def values_bench_cmd(
    data: str = typer.Option(None, "--data-root", help=_DATA_HELP),
    split: str = typer.Option("dev", help="Spider split whose databases are measured: dev or train."),
    probes: int = typer.Option(50, help="Stored values sampled per database as lookup probes."),
    repeat: int = typer.Option(5, help="Repeats per lookup (the median is kept)."),
    markdown: bool = typer.Option(False, "--markdown", help="Print a Markdown table for docs/benchmarks.md "
                                                            "(also when stdout is not a terminal)."),
    quiet: bool = QUIET,
) -> None:
    """Value index: build time, cache load time and lookup latency per mode over Spider's databases."""
    from sqlmend.bench.value_speed import bench_values, spider_databases

    try:
        ids, present = spider_databases(data_root(data) / "spider", split)
    except SqlmendError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    missing = sorted(set(ids) - {p.parent.name for p in present})
    result = bench_values(present, probes_per_db=probes, repeat=repeat,
                          progress=lambda xs: progress_bar(xs, desc="value index", unit="db", disable=quiet))
    builds = sorted(result.build_seconds.values())
    loads = sorted(result.load_seconds.values())
    head = (f"{len(ids)} Spider {split} databases ({len(present)} present"
            + (f"; missing: {', '.join(missing)}" if missing else "") + f"), "
            f"{sum(result.values.values())} distinct text values; "
            f"build total {sum(builds):.3f}s (max {builds[-1]:.3f}s), "
            f"cache load total {sum(loads):.3f}s (max {loads[-1]:.4f}s)")
    rows = [(mode, s) for mode, s in result.summary().items()]
    if markdown:
        head = f"{head}; {_dt.date.today().isoformat()}"
    typer.echo(head + ("\n" if markdown else ""))
    cells = [(mode, s["calls"], f"{s['median_us']:.1f}", f"{s['p95_us']:.1f}", f"{s['max_us']:.1f}",
              f"{100 * s['hit_rate']:.0f}%") for mode, s in rows]
    columns = ("lookup", "calls", "median µs", "p95 µs", "max µs", "finds the stored value")
    if markdown:
        typer.echo(markdown_table(columns, cells))
    else:
        print_table(columns, cells)


def engines_bench_cmd(
    engine: list[str] = typer.Option(["mysql"], "--engine", help="mysql (a MariaDB server), postgres or duckdb; "
                                                              "repeat for several"),
    pred: list[Path] = typer.Option([], "--pred", help="Spider-dev prediction file(s) to correct on SQLite "
                                                       "and on the engine (none: the golds only)"),
    out: Path = typer.Option(Path("runs/bench-engines"), "--out", "-o", help="report folder (report.json, "
                                                                               "report.md)"),
    collation: str = typer.Option(None, help="MySQL's collation of text columns (default utf8mb4_nopad_bin, "
                                             "SQLite's comparison; e.g. utf8mb4_general_ci, the server default)"),
    workers: int = typer.Option(2, help="tasks corrected at once"),
    timeout: float = typer.Option(30.0, help="seconds per query"),
    limit: int = typer.Option(None, help="only the first N dev questions (a quick look)"),
    data: str = typer.Option(None, "--data-root", help=_DATA_HELP),
) -> None:
    """Spider dev on another engine: golds transpiled from SQLite, and a prediction file corrected there.

    Starts a throw-away MariaDB (or PostgreSQL) server, or writes DuckDB files, copies the 19 Spider
    dev databases into it, and reports (a) how many dev golds, transpiled by sqlglot, return SQLite's
    rows there, and why the others do not; (b) for each --pred file, transpiled the same way, the
    default correction on the engine against the same file on SQLite: right before and after, fixes,
    regressions, and the questions whose outcome differs (all of them in report.json).

    Example: sqlmend bench engines --engine mysql --pred ../shared/data/predictions/spider-dev/gpt-4_zero-shot.sql
    """
    from sqlmend.testing.copydb import MYSQL_COLLATION
    from sqlmend.bench.engines import ENGINES, bench_engine, markdown, write
    from sqlmend.data.datasets import load_dataset

    unknown = [e for e in engine if e not in ENGINES]
    if unknown:
        typer.echo(f"error: unknown engine {', '.join(unknown)}; known: {', '.join(ENGINES)}", err=True)
        raise typer.Exit(2)
    try:
        ds = load_dataset("spider-dev", data_root=data)
        reports = [bench_engine(e, ds, pred, timeout=timeout, collation=collation or MYSQL_COLLATION,
                                workers=workers, limit=limit, echo=lambda line: typer.echo(line, err=True))
                   for e in engine]
    except (SqlmendError, RuntimeError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None
    write(reports, out)
    typer.echo(f"{_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} UTC\n\n" + markdown(reports))


def register(app: typer.Typer) -> None:
    """Add ``sqlmend db`` to the app and ``values`` and ``engines`` to ``sqlmend bench``."""
    from sqlmend.cli import bench_app

    app.add_typer(db_app, name="db")
    bench_app.command("values")(values_bench_cmd)
    bench_app.command("engines")(engines_bench_cmd)

