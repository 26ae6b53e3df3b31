"""``sqlmend mcp``: the MCP server for agents (:mod:`sqlmend.mcpserver`)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import typer

from sqlmend.cli.correct_cmd import _ALLOW_FUNCTION, _MODEL, _OPTION, _STAGES, _TIMEOUT
from sqlmend.cli.output import REQUIRE_READ_ONLY
from sqlmend.cli.serve_cmd import _MEMORY_NAMESPACE, _MEMORY_STORE, _STRATEGY, server_config
from sqlmend.errors import SqlmendError

_DB_HELP = ("a database the agent may name: NAME=PATH_OR_URL (a .sqlite path, postgresql://..., "
            "duckdb:///...), or a bare PATH_OR_URL named after its file or database; repeatable")
_CONFIG_HELP = ('a TOML file with a \\[databases] table of NAME = "PATH_OR_URL" lines (relative to the file); '
                'optional keys require_read_only_login = true, allow_functions = \\["NAME", ...]')


def mcp(
    db: list[str] = typer.Option(None, "--db", metavar="NAME=PATH_OR_URL", help=_DB_HELP),
    config_file: Path = typer.Option(None, "--config", metavar="FILE", help=_CONFIG_HELP),
    transport: str = typer.Option("stdio", metavar="stdio|http",
                                  help="stdio: what desktop agents launch; http: streamable HTTP at /mcp"),
    host: str = typer.Option("127.0.0.1", help="http: address to bind"),
    port: int = typer.Option(8000, help="http: port"),
    token: str = typer.Option(None, envvar="SQLMEND_TOKEN", show_envvar=True,
                              help="http: bearer token every request but /health must carry (stdio: none)"),
    stages: str = _STAGES,
    strategy: str = _STRATEGY,
    model: list[str] = _MODEL,
    option: list[str] = _OPTION,
    memory_store: str = _MEMORY_STORE,
    memory_namespace: str = _MEMORY_NAMESPACE,
    timeout: float = _TIMEOUT,
    allow_function: list[str] = _ALLOW_FUNCTION,
    require_read_only_login: bool = REQUIRE_READ_ONLY,
) -> None:
    """Serve sqlmend's check and correction to agents over the Model Context Protocol.

    Tools: list_databases, describe_schema(database), check_sql(database, question, sql,
    evidence?), correct_sql(database, question, sql, evidence?) and run_sql(database, sql,
    question?, correct?, max_rows?): the query corrected, then run, its rows bounded. Only the
    databases given here can be named; every query runs read-only and time-limited, and a text
    that is not one read-only query is reported, never run. Over stdio, stdout carries the protocol only (logs go
    to stderr); over HTTP the endpoint is http://HOST:PORT/mcp, with the bearer token of --token
    or $SQLMEND_TOKEN (docs/mcp.md).

    Example (an agent launches it): sqlmend mcp --db concert=spider/concert_singer.sqlite

    Example (a shared server): SQLMEND_TOKEN=... sqlmend mcp --config mcp.toml --transport http
    --port 8000 --stages static,guard

    Every database's login is checked when the server starts: one that may do more than read (a
    superuser, write grants, a writable file) is warned about once (stderr, and /health over HTTP),
    or refused with --require-read-only-login.
    """
    from sqlmend.mcpserver.config import config_settings, databases, open_databases

    try:
        from sqlmend.mcpserver.server import build_server, serve_http, serve_stdio
    except ImportError as exc:  # the mcp extra is not installed
        typer.echo(f"error: sqlmend mcp needs the MCP SDK ({exc}): pip install 'sqlmend[mcp]'", err=True)
        raise typer.Exit(2) from None
    if transport not in ("stdio", "http"):
        raise typer.BadParameter(f"--transport {transport!r}: expected stdio or http")
    try:
        extra = config_settings(config_file) if config_file else {}
    except SqlmendError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    config = server_config(strategy, stages, model, option, timeout, memory_store, memory_namespace,
                           [*(allow_function or []), *extra.get("allow_functions", [])],
                           require_read_only_login or extra.get("require_read_only_login", False))
    # stdout is the protocol's on stdio: whatever opening the databases prints goes to stderr
    with contextlib.redirect_stdout(sys.stderr):
        try:
            held, correctors = open_databases(databases(db or [], config_file), config)
        except SqlmendError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
    try:
        server = build_server(correctors)
        if transport == "stdio":
            serve_stdio(server)
        else:
            serve_http(server, token or None, host=host, port=port, logins=held.login_list())
    finally:
        held.close()


def register(app: typer.Typer) -> None:
    """Add ``mcp`` to the app."""
    app.command("mcp")(mcp)
