"""The read-only check: is a SQL text one read-only SELECT/WITH, and nothing else?

Every database connection of sqlmend runs this check on the parsed AST before a
query reaches the engine (the engines then refuse writes a second time: SQLite's
authorizer, PostgreSQL's read-only transaction, DuckDB's read-only mode).

The check refuses:

* more than one statement (including one hidden behind a comment);
* any statement whose root is not a query (SELECT, a set operation, VALUES);
* any write, DDL, session or file node anywhere in the tree (a DELETE inside a
  CTE, ``SELECT ... INTO``, ``SELECT ... FOR UPDATE``, ATTACH, PRAGMA, COPY, ...);
* functions that read or write files, load code or change server state
  (``load_extension``, ``pg_read_file``, ``read_csv``, ``set_config``, ...);
* a table named by a string (DuckDB reads ``FROM 'file.csv'``).

A text sqlglot cannot parse is still judged: when its tokens show a single
statement that starts like a query and contains no write keyword it is passed on,
so that the engine reports the syntax error itself (a wrong prediction must fail
like it fails in the engine); otherwise it is refused.

The verdict is a pure function of the text and the dialect, so the last
:data:`VERDICT_CACHE_SIZE` verdicts are kept in memory: a text checked twice on
one path (a query run again; a gold equal to its prediction) is parsed once. A
caller that has parsed the text already checks its tree with
:func:`check_read_only_tree` (the guard does). Every text is still judged on its parsed AST
before its first run.
"""

from __future__ import annotations

import logging
import threading
from functools import lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from sqlmend.errors import ReadOnlyViolation
from sqlmend.sql.dialects import resolve
from sqlmend.sql.parse import nested_too_deeply

#: Node classes that write, change the schema or the session, or touch files.
FORBIDDEN_NODES: tuple[type[exp.Expression], ...] = tuple(
    getattr(exp, name) for name in (
        "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "TruncateTable",
        "Attach", "Detach", "Pragma", "Command", "Copy", "Into", "Lock", "Set", "Use",
        "Transaction", "Commit", "Rollback", "LoadData", "Grant", "Revoke", "Analyze",
        "Install", "Kill", "Cache", "Uncache", "Refresh", "Export", "Describe", "Show",
        "Summarize",
    ) if hasattr(exp, name)
)

#: Query roots allowed at the top of the statement.
QUERY_ROOTS: tuple[type[exp.Expression], ...] = (exp.Select, exp.SetOperation, exp.Values,
                                                  exp.Subquery)

#: Functions refused in any dialect (lower case). Reading files, loading code,
#: changing server state, sequences and large objects, remote databases.
FORBIDDEN_FUNCTIONS: frozenset[str] = frozenset({
    # SQLite
    "load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "zipfile",
    "sqlar_compress", "sqlar_uncompress", "lsdir", "fsdir",
    # PostgreSQL
    "pg_read_file", "pg_read_binary_file", "pg_ls_dir", "pg_stat_file", "pg_ls_logdir",
    "pg_ls_waldir", "pg_ls_tmpdir", "pg_ls_archive_statusdir", "lo_import", "lo_export",
    "lo_from_bytea", "lo_put", "lo_create", "lo_unlink", "lo_creat", "lo_open", "lo_truncate",
    "set_config", "pg_reload_conf", "pg_rotate_logfile", "pg_terminate_backend",
    "pg_cancel_backend", "pg_switch_wal", "pg_create_restore_point", "pg_promote",
    "nextval", "setval", "pg_advisory_lock", "pg_advisory_xact_lock", "pg_try_advisory_lock",
    "pg_file_write", "pg_file_rename", "pg_file_unlink", "dblink", "dblink_exec",
    "dblink_connect", "query_to_xml", "pg_logical_emit_message", "txid_current",
    "pg_current_xact_id",
    # DuckDB
    "read_csv", "read_csv_auto", "read_parquet", "parquet_scan", "read_json", "read_json_auto",
    "read_json_objects", "read_ndjson", "read_ndjson_auto", "read_ndjson_objects", "read_text",
    "read_blob", "glob", "sqlite_scan", "sqlite_attach", "postgres_scan", "postgres_attach",
    "postgres_query", "mysql_scan", "iceberg_scan", "delta_scan", "read_xlsx", "query_table",
    "query", "parquet_metadata", "parquet_schema", "duckdb_secrets", "getenv",
})

#: Keywords that, in a text sqlglot cannot parse, mark it as more than a query.
_WRITE_TOKENS = frozenset({
    TokenType.INSERT, TokenType.UPDATE, TokenType.DELETE, TokenType.DROP, TokenType.CREATE,
    TokenType.ALTER, TokenType.PRAGMA, TokenType.COPY, TokenType.MERGE,
    TokenType.INTO, TokenType.SET, TokenType.USE, TokenType.COMMIT, TokenType.ROLLBACK,
    TokenType.BEGIN, TokenType.TRUNCATE, TokenType.COMMAND, TokenType.GRANT,
    TokenType.LOAD, TokenType.ATTACH, TokenType.DETACH, TokenType.INSTALL,
} & set(TokenType))

_WRITE_WORDS = frozenset({
    "insert", "update", "delete", "drop", "create", "alter", "attach", "detach", "pragma",
    "vacuum", "reindex", "analyze", "copy", "merge", "into", "set", "use", "begin",
    "commit", "rollback", "savepoint", "release", "truncate", "grant", "revoke", "load",
    "install", "export", "import", "call", "do", "execute", "prepare", "lock", "checkpoint",
    "upsert", "returning",
})

_FILE_SUFFIXES = (".csv", ".tsv", ".txt", ".parquet", ".json", ".ndjson", ".jsonl", ".gz", ".zst",
                  ".xlsx", ".db", ".sqlite", ".duckdb", ".arrow")

_QUERY_START = frozenset({"select", "with", "values", "("})

_log = logging.getLogger("sqlglot")


def check_read_only(sql: str, dialect: str = "sqlite") -> None:
    """Refuse anything but a single read-only SELECT/WITH query.

    Args:
        sql: the SQL text.
        dialect: the dialect to parse with (``"sqlite"``, ``"postgres"``, ``"duckdb"``, ...).

    Raises:
        ReadOnlyViolation: the text is empty, holds several statements, or writes,
            changes the schema or session, loads code or touches files.
    """
    if not sql or not sql.strip():
        raise ReadOnlyViolation("empty SQL")
    refusal = _refusal(sql, resolve(dialect))
    if refusal is not None:
        raise ReadOnlyViolation(refusal)


#: How many (text, dialect) verdicts :func:`check_read_only` remembers.
VERDICT_CACHE_SIZE = 4096


def forget_verdicts() -> None:
    """Empty the in-memory cache of read-only verdicts (benchmarks that must start cold)."""
    _refusal.cache_clear()


@lru_cache(maxsize=VERDICT_CACHE_SIZE)
def _refusal(sql: str, read: str) -> str | None:
    """The reason ``sql`` is refused in dialect ``read``, or None when it is one read-only query."""
    try:
        _judge(sql, read)
    except ReadOnlyViolation as e:
        return str(e)
    return None


_local = threading.local()


def _parse(sql: str, read: str) -> list:
    """``sqlglot.parse(sql, read=read)``, on a tokenizer and parser kept per thread and dialect
    (both reset themselves on every call; building them costs as much as tokenizing a query)."""
    tools = getattr(_local, "tools", None)
    if tools is None:
        tools = _local.tools = {}
    pair = tools.get(read)
    if pair is None:
        dialect = sqlglot.Dialect.get_or_raise(read)
        pair = tools[read] = (dialect.tokenizer(), dialect.parser())
    tokenizer, parser = pair
    return parser.parse(tokenizer.tokenize(sql), sql)


def _judge(sql: str, read: str) -> None:
    # sqlglot warns when it falls back to exp.Command; muted by ``disabled`` (setLevel would
    # clear every logger's level cache on each call)
    if nested_too_deeply(sql):  # sqlglot's compiled parser would overflow the C stack on it
        raise ReadOnlyViolation("nested too deeply to check that it only reads")
    disabled, _log.disabled = _log.disabled, True
    try:
        statements = [s for s in _parse(sql, read) if s is not None]
    except (ParseError, TokenError):
        _check_unparsed(sql, read)
        return
    except RecursionError:  # nested past what sqlglot's recursive parser can read: cannot be proven read-only
        raise ReadOnlyViolation("nested too deeply to check that it only reads") from None
    finally:
        _log.disabled = disabled
    if len(statements) != 1:
        raise ReadOnlyViolation(
            f"expected one statement, found {len(statements)}" if statements else "no statement")
    _check_tree(statements[0])


def check_read_only_tree(tree: exp.Expression) -> None:
    """Refuse a parsed statement that is not a read-only SELECT/WITH query (no parsing).

    For a caller that already holds the one statement of a text (``sqlmend.sql.parse``):
    the same checks :func:`check_read_only` runs on the tree it parses.

    Args:
        tree: the statement's root node.

    Raises:
        ReadOnlyViolation: the root is not a query, or a node writes, changes the schema
            or session, loads code or touches files.
    """
    _check_tree(tree)


def is_read_only(sql: str, dialect: str = "sqlite") -> bool:
    """Return whether :func:`check_read_only` accepts ``sql``.

    Args:
        sql: the SQL text.
        dialect: the dialect to parse with.

    Returns:
        True when the text is a single read-only query.
    """
    try:
        check_read_only(sql, dialect)
    except ReadOnlyViolation:
        return False
    return True


def _check_tree(tree: exp.Expression) -> None:
    if not isinstance(tree, QUERY_ROOTS):
        raise ReadOnlyViolation(f"not a query: {type(tree).__name__.upper()} statement refused")
    for node in tree.walk():
        checks = _CHECKS.get(type(node), _UNSEEN)
        if checks is _UNSEEN:
            checks = _CHECKS[type(node)] = _checks_of(type(node))
        if checks is None:  # most nodes: columns, identifiers, literals, operators
            continue
        refused, anonymous, table = checks
        if refused:
            raise ReadOnlyViolation(refused)
        if anonymous:
            name = _function_name(node)
            if name in FORBIDDEN_FUNCTIONS:
                raise ReadOnlyViolation(f"function {name}() is not allowed")
        if table and _names_a_file(node):
            raise ReadOnlyViolation(f"reading from a file {node.this.sql()} is not allowed")


_UNSEEN = object()
#: Node class -> what to check on its nodes (see :func:`_checks_of`), filled as classes are met.
_CHECKS: dict[type, tuple[str, bool, bool] | None] = {}


def _checks_of(cls: type) -> tuple[str, bool, bool] | None:
    """What a node of class ``cls`` needs: (refusal that holds for every such node, or "";
    whether its function name must be read from the node; whether it is a table), or None."""
    refused = ""
    if issubclass(cls, FORBIDDEN_NODES):
        refused = f"{cls.__name__.upper()} is not allowed in a read-only query"
    anonymous = issubclass(cls, exp.Anonymous)
    if not refused and issubclass(cls, exp.Func) and not anonymous:
        name = cls.sql_name().lower() if hasattr(cls, "sql_name") else cls.__name__.lower()
        if name in FORBIDDEN_FUNCTIONS:
            refused = f"function {name}() is not allowed"
    table = issubclass(cls, exp.Table)
    return (refused, anonymous, table) if refused or anonymous or table else None


def _names_a_file(table: exp.Table) -> bool:
    """A table given as a string or a path (DuckDB's replacement scans read such files)."""
    if isinstance(table.this, exp.Literal):
        return True
    name = table.name if isinstance(table.this, exp.Identifier) else ""
    return "/" in name or "\\" in name or name.lower().endswith(_FILE_SUFFIXES)


def _function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    return node.sql_name().lower() if hasattr(node, "sql_name") else type(node).__name__.lower()


def _check_unparsed(sql: str, read: str) -> None:
    """Judge a text sqlglot cannot parse from its tokens alone."""
    try:
        tokens = sqlglot.Dialect.get_or_raise(read).tokenize(sql)
    except (TokenError, ParseError) as e:
        raise ReadOnlyViolation(f"SQL cannot be tokenized: {e}") from e
    if not tokens:
        raise ReadOnlyViolation("no statement")
    body = list(tokens)
    while body and body[-1].token_type == TokenType.SEMICOLON:
        body.pop()
    if any(t.token_type == TokenType.SEMICOLON for t in body):
        raise ReadOnlyViolation("several statements are not allowed")
    if not body or body[0].text.lower() not in _QUERY_START:
        raise ReadOnlyViolation("not a query: only SELECT/WITH statements are allowed")
    for i, t in enumerate(body):
        if t.token_type in (TokenType.STRING, TokenType.NATIONAL_STRING):
            continue
        word = t.text.lower()
        called = i + 1 < len(body) and body[i + 1].token_type == TokenType.L_PAREN
        if t.token_type in _WRITE_TOKENS or word in _WRITE_WORDS or (
                called and word in FORBIDDEN_FUNCTIONS):
            raise ReadOnlyViolation(f"{t.text.upper()} is not allowed in a read-only query")
