"""The MCP server of ``sqlmend mcp`` on the official ``mcp`` SDK: stdio and streamable HTTP.

:func:`build_server` registers the six tools of :mod:`sqlmend.mcpserver.tools` on an
``MCPServer``; each tool call runs that module's function in a worker thread and answers its
dict as structured content (with the JSON schema the tool advertises) beside a text rendering.
An unknown database or a bad argument is a tool error (``isError``) whose message names the
problem; the server goes on serving. :func:`http_app` is the streamable-HTTP app (``/mcp``)
behind the HTTP service's admission middleware: the bearer token of ``$SQLMEND_TOKEN`` (401
without it), a body size limit, and ``GET /health`` open for probes.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from sqlmend import __version__
from sqlmend.db.account import Login
from sqlmend.db.account import health as login_health
from sqlmend.db.base import limit_malloc_arenas
from sqlmend.errors import ConfigError
from sqlmend.mcpserver import tools
from sqlmend.mcpserver.rows import MAX_RUN_ROWS, RUN_ROWS

#: Where the MCP endpoint answers on HTTP.
MCP_PATH = "/mcp"
#: The largest HTTP request body (a tool call's JSON).
MAX_BODY_BYTES = 1 << 20
#: The longest question, evidence or SQL a tool takes (characters).
MAX_TEXT = 100_000
#: Seconds a correcting tool call may take (the service's default deadline); the item's own bound ends
#: it first (0.8 x the Corrector's ``timeout`` of work, its wall-clock net a little past that).
DEADLINE = 30.0

_log = logging.getLogger("sqlmend.mcp")

INSTRUCTIONS = (
    "sqlmend checks and corrects SQL written for the configured databases before it is run or "
    "shown. Call list_databases for their names, find_schema for the tables, columns, joins and "
    "stored values a question needs (a big database), describe_schema for a database's tables, "
    "columns and stored values, check_sql to learn whether a query is wrong and why (with the "
    "database's evidence), correct_sql for the corrected query, and run_sql to correct a query and "
    "get its rows. Queries are never run for their effects: only one read-only SELECT/WITH is "
    "executed; anything else is reported."
)


# --- what the tools answer (their output schemas) ----------------------------


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class FindingOut(_Open):
    """Something found wrong, with the database's evidence and the fixes it proposes."""

    code: str = Field(description="rule or stage code, e.g. VL01 (value), EX02 (fails to run), EX03 (refused)")
    error_type: str = Field(description="the error type (sqlmend.taxonomy), e.g. value_error")
    message: str
    severity: str = Field(description="strict: may be fixed automatically; advisory: informs only")
    source: str
    location: str
    schema_refs: list[str]
    evidence: dict[str, Any] = Field(description="what the schema or the data showed")
    fixes: list[Any] = Field(description="proposed fixes as data")
    score: float | None = None


class _Answer(_Open):
    database: str
    findings: list[FindingOut]
    refused: bool = Field(description="the text is not one read-only query: reported, never run")
    error: str | None = Field(description="a problem of this item (e.g. empty SQL); the SQL is kept")
    explanation: str = Field(description="what each stage decided and why")


class CorrectOut(_Answer):
    sql: str = Field(description="the SQL to use: the guarded rewrite, or the input unchanged")
    original_sql: str
    changed: bool


class CheckOut(_Answer):
    sql: str = Field(description="the SQL checked, as given")
    wrong: bool = Field(description="some stage found something wrong")


class RunOut(CorrectOut):
    sql: str = Field(description="the SQL run: the guarded rewrite, or the input unchanged (correct=false: as given)")
    ran: bool = Field(description="the query ran and its rows are here")
    columns: list[str]
    rows: list[list[Any]] = Field(description="the rows, each a list of values (a blob as '<blob: N bytes>')")
    row_count: int = Field(description="rows in this answer")
    truncated: bool = Field(description="the result has more rows than this answer holds")
    truncated_by: str | None = Field(description="max_rows, or max_bytes: the answer's size limit")
    seconds: float | None = Field(description="the query's time")
    run_error: str | None = Field(description="why the query failed when it ran (the engine's error, its time limit)")


class SchemaCount(_Open):
    name: str
    relations: int


class DatabaseOut(_Open):
    name: str
    dialect: str
    relations: int = Field(description="tables, views and materialized views the login may read")
    schemas: list[SchemaCount] = Field(description="each schema read, with its relations")
    tables: list[str] | None = Field(None, description="the relations' names (with tables=true)")


class DatabasesOut(_Open):
    databases: list[DatabaseOut]


class SchemaOut(_Open):
    database: str
    dialect: str
    schemas: list[str] = Field(default_factory=list, description="the schemas read")
    search_path: list[str] = Field(default_factory=list,
                                   description="the schemas an unqualified table name is looked up in")
    relations: int = Field(0, description="the relations asked for (all, or those of schema= / tables=)")
    tables: list[dict[str, Any]] = Field(description="this page's relations: name (schema.name outside the search "
                                                     "path), schema, kind (table, view, materialized view), "
                                                     "comment, row_count, primary_key, foreign_keys, columns "
                                                     "(name, type, primary_key, not_null, comment; text columns: "
                                                     "values, distinct_values, more_values)")
    next_cursor: str | None = Field(None, description="more relations than the answer's size holds: pass it as "
                                                      "cursor for the next page (None on the last)")


class JoinOut(_Open):
    left: str = Field(description="table.column")
    right: str = Field(description="table.column")
    how: str = Field(description="foreign key, or same name (a column named as the other table's key)")


class FoundSchemaOut(_Open):
    database: str
    dialect: str
    tables: list[str] = Field(description="the relations the question needs, best first, as a query writes them")
    columns: list[str] = Field(description="the columns written in text, table.column")
    joins: list[JoinOut] = Field(description="how the tables written join")
    values: dict[str, list[str]] = Field(description="stored values the question's (and the draft's) values "
                                                     "match, by table.column: write literals as stored")
    text: str = Field(description="the tables, columns, keys, joins and values as a prompt or an agent reads them")
    budget: int
    relations: int = Field(description="relations of the whole database")
    scores: dict[str, float] = Field(description="each table's evidence, summed")
    embedder: bool = Field(description="the embedder's evidence counted (an embedder model is configured)")


# --- the tools -------------------------------------------------------------------

Database = Annotated[str, Field(description="a name from list_databases", min_length=1, max_length=64)]
Question = Annotated[str, Field(description="the natural-language question the SQL answers",
                                max_length=MAX_TEXT)]
Sql = Annotated[str, Field(description="the SQL to check (SQLite, PostgreSQL or DuckDB, as the database)",
                           max_length=MAX_TEXT)]
Evidence = Annotated[str | None, Field(description="optional external knowledge (BIRD style), e.g. "
                                                   "definitions of terms in the question", max_length=MAX_TEXT)]

Alternatives = Annotated[list[Annotated[str, Field(max_length=MAX_TEXT)]] | None,
                         Field(description="optional other answers to the same question (other systems, prompts "
                                           "or samples of a model): sqlmend reports how many return the SQL's "
                                           "rows and may answer with theirs; each is run only if it is one "
                                           "read-only query", max_length=16)]

RunSql = Annotated[str, Field(description="the SQL to run (SQLite, PostgreSQL or DuckDB, as the database)",
                              max_length=MAX_TEXT)]
RunQuestion = Annotated[str | None, Field(description="optional: the natural-language question the SQL answers "
                                                     "(evidence for the correction)", max_length=MAX_TEXT)]
MaxRows = Annotated[int, Field(description=f"rows the answer holds at most (1 to {MAX_RUN_ROWS}); the answer "
                                           "also stops at 64 KB of values and says when it was cut",
                               ge=1, le=MAX_RUN_ROWS)]

Tables = Annotated[bool, Field(description="also list each database's relation names (as a query writes them)")]
SchemaName = Annotated[str | None, Field(description="only the relations of this schema", max_length=256)]
TableNames = Annotated[list[Annotated[str, Field(max_length=256)]] | None,
                       Field(description="only these relations (as a query writes them, or plain names in any "
                                         "schema)", max_length=200)]
Cursor = Annotated[str | None, Field(description="next_cursor of the previous answer: the next page",
                                     max_length=32)]
Budget = Annotated[int, Field(description="the answer's size at most, in bytes of JSON (at least one relation)",
                              ge=1024, le=1 << 20)]
TextBudget = Annotated[int, Field(description="the text's size at most, in characters", ge=256, le=1 << 20)]
DraftSql = Annotated[str | None, Field(description="optional: a draft query for the question, even one that fails "
                                                   "(its names are evidence; it is never run)", max_length=MAX_TEXT)]

_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                             open_world_hint=False)


async def _answer(fn: Callable[..., dict[str, Any]], text: Callable[[dict[str, Any]], str],
                  *args: Any, deadline: float | None = None) -> CallToolResult:
    """Run one tool function in a worker thread; a ConfigError is the tool's error.

    With a ``deadline`` (the correcting tools), a call still running past it, or one the client
    cancels, is abandoned and its correction told to stop (the function's ``cancel`` event): it ends
    at its next unit of work, so its thread serves the next call instead of finishing unseen work.
    """
    cancel = threading.Event()
    call = functools.partial(fn, *args, cancel=cancel) if deadline is not None else functools.partial(fn, *args)
    try:
        with anyio.fail_after(deadline):
            body = await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
    except ConfigError as exc:
        raise ToolError(str(exc)) from None
    except TimeoutError:
        cancel.set()
        raise ToolError(f"no answer within the server's deadline of {deadline:g} s: the correction was "
                        "stopped and the query is unchanged") from None
    except BaseException:  # the client cancelled the call (or the server stops): stop the work too
        cancel.set()
        raise
    return CallToolResult(content=[TextContent(type="text", text=text(body))], structured_content=body)


def _explanation(body: dict[str, Any]) -> str:
    return body["explanation"]


def _found_text(body: dict[str, Any]) -> str:
    return body["text"]


def build_server(correctors: tools.Correctors, deadline: float = DEADLINE) -> MCPServer:
    """The MCP server of the configured databases (``{name: Corrector}``, kept open by the caller).

    ``deadline``: seconds a ``check_sql`` / ``correct_sql`` / ``run_sql`` call may take; past it the call is a tool
    error and its correction stops (:func:`_answer`).
    """
    limit_malloc_arenas()  # a long-running process (see sqlmend.db.base.MALLOC_ARENAS)
    server = MCPServer("sqlmend", title="sqlmend", version=__version__, instructions=INSTRUCTIONS,
                       log_level="WARNING")

    @server.tool(annotations=_READ_ONLY)
    async def list_databases(tables: Tables = False) -> Annotated[CallToolResult, DatabasesOut]:
        """List the databases this server checks SQL against: name, dialect (sqlite, postgres,
        duckdb), how many relations and each schema with its count; their names with tables=true.
        Use a name as the `database` argument of the other tools."""
        return await _answer(tools.list_databases, tools.databases_text, correctors, tables)

    @server.tool(annotations=_READ_ONLY)
    async def describe_schema(database: Database, schema: SchemaName = None, tables: TableNames = None,
                              cursor: Cursor = None, budget: Budget = tools.BUDGET
                              ) -> Annotated[CallToolResult, SchemaOut]:
        """Describe one database as sqlmend's rules see it: tables with row counts, columns with
        types, primary and foreign keys, and a few stored values of each text column (literals in
        SQL must match these exactly, letter case included). Call it before writing SQL. A big
        database answers a page at a time (`next_cursor`); ask for one `schema` or some `tables`."""
        return await _answer(tools.describe_schema, tools.schema_text, correctors, database, tools.SAMPLE_VALUES,
                             schema, tables, budget, cursor)

    @server.tool(annotations=_READ_ONLY)
    async def find_schema(database: Database, question: Question, sql: DraftSql = None,
                          budget: TextBudget = tools.SCHEMA_BUDGET) -> Annotated[CallToolResult, FoundSchemaOut]:
        """Find the tables and columns a question needs in a database, best first, with the joins between
        them and the stored values its words match, within `budget` characters: call it before writing
        SQL for a database with many tables (then check_sql or correct_sql the draft). Give a draft `sql`
        that failed to have its names (even invented ones) point to the real ones."""
        return await _answer(tools.find_schema, _found_text, correctors, database, question, sql, budget)

    @server.tool(annotations=_READ_ONLY)
    async def check_sql(database: Database, question: Question, sql: Sql, evidence: Evidence = None,
                        alternatives: Alternatives = None) -> Annotated[CallToolResult, CheckOut]:
        """Check a SQL query against its question and database without changing it: `wrong` tells
        whether something was found, `findings` what (error type, message, the schema or data
        evidence, proposed fixes). A text that is not one read-only query (DROP, UPDATE, several
        statements) is reported as `refused` and never run; a query that runs past the time limit
        is a finding. Use it before running a query or showing it to a person."""
        return await _answer(tools.check_sql, _explanation, correctors, database, question, sql, evidence,
                             alternatives, deadline=deadline)

    @server.tool(annotations=_READ_ONLY)
    async def correct_sql(database: Database, question: Question, sql: Sql, evidence: Evidence = None,
                          alternatives: Alternatives = None) -> Annotated[CallToolResult, CorrectOut]:
        """Correct a SQL query for its question and database: `sql` is the query to use (a rewrite
        only when the database proves the input wrong and the rewrite passes sqlmend's guard,
        else the input unchanged), `changed` says which, `findings` and `explanation` say why.
        Never runs anything but one read-only query."""
        return await _answer(tools.correct_sql, _explanation, correctors, database, question, sql, evidence,
                             alternatives, deadline=deadline)

    @server.tool(annotations=_READ_ONLY)
    async def run_sql(database: Database, sql: RunSql, question: RunQuestion = None, correct: bool = True,
                      max_rows: MaxRows = RUN_ROWS) -> Annotated[CallToolResult, RunOut]:
        """Run one read-only SQL query and get its rows, corrected first: `sql` in the answer is the
        query that ran (the corrected one when the database proves the input wrong, `changed` and
        `findings` say why), `rows` its result, at most `max_rows` rows and 64 KB (`truncated` says when
        more exist). With `correct` false the query runs as given. A text that is not one read-only
        query (DROP, UPDATE, several statements, a function that writes) is `refused` and never run."""
        return await _answer(tools.run_sql, tools.run_text, correctors, database, sql, question, correct,
                             max_rows, deadline=deadline)

    return server


def http_app(server: MCPServer, token: str | None, host: str = "127.0.0.1",
             logins: list[Login] | None = None) -> Any:
    """The streamable-HTTP ASGI app: ``POST/GET/DELETE /mcp``, ``GET /health`` (open for probes).

    Args:
        server: the MCP server.
        token: the bearer token every request but ``/health`` must carry (None: no auth).
        host: the address served (loopback turns on the SDK's DNS-rebinding protection).
        logins: what the databases' logins may do (``/health``'s ``login``: :func:`sqlmend.db.account.health`).
    """
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    from sqlmend.service.limits import AdmissionMiddleware

    @server.custom_route("/health", methods=["GET"])
    async def health(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "server": "sqlmend", "version": __version__,
                             "login": login_health(logins or [])})

    app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host,
                                     max_request_body_size=MAX_BODY_BYTES)
    return AdmissionMiddleware(app, token=token, max_body_bytes=MAX_BODY_BYTES)


def serve_stdio(server: MCPServer) -> None:
    """Serve on stdin/stdout until the client closes them (stdout carries protocol only)."""
    server.run("stdio")


def serve_http(server: MCPServer, token: str | None, host: str = "127.0.0.1", port: int = 8000,
               logins: list[Login] | None = None) -> None:
    """Serve streamable HTTP on ``http://HOST:PORT/mcp`` until interrupted."""
    import uvicorn

    from sqlmend.service.runner import _uvicorn_options

    if not token:
        _log.warning("serving MCP over HTTP without a bearer token (set SQLMEND_TOKEN)")
    uvicorn.run(http_app(server, token, host, logins), **_uvicorn_options(host, port))


__all__ = ["INSTRUCTIONS", "MCP_PATH", "build_server", "http_app", "serve_http", "serve_stdio"]
