"""The read-only check: is a SQL text one read-only SELECT/WITH, and nothing else?

Every database connection of sqlmend runs this check on the parsed AST before a
query reaches the engine (the engines then refuse writes a second time: SQLite's
authorizer, PostgreSQL's read-only transaction, DuckDB's read-only mode).

The check refuses:

* more than one statement (including one hidden behind a comment);
* any statement whose root is not a query (SELECT, a set operation, VALUES);
* any write, DDL, session or file node anywhere in the tree (a DELETE inside a
  CTE, ``SELECT ... INTO``, ``SELECT ... FOR UPDATE``, ATTACH, PRAGMA, COPY, ...);
* a call of a function that is not on the dialect's list of functions that read and compute
  (:mod:`sqlmend.sql.functions`: an allow-list per dialect, made from the engine's catalogue):
  ``pg_stat_reset()``, ``GET_LOCK()``, ``read_csv()`` and every function the list does not name;
* a table named by a string (DuckDB reads ``FROM 'file.csv'``).

A call of a name the list does not know is not refused here: the check returns such names, and the
database (:meth:`sqlmend.db.base.Database.execute`) refuses the query when its engine has a function
of that name, or lets the engine report that it has none (a prediction that calls ``YEAR()`` on
SQLite fails there as it always did). A user's own pure functions join the list through ``extra``
(the configuration's ``allow_functions``).

A text sqlglot cannot parse is still judged: when its tokens show a single
statement that starts like a query and contains no write keyword it is passed on,
so that the engine reports the syntax error itself (a wrong prediction must fail
like it fails in the engine); otherwise it is refused.

The verdict is a pure function of the text, the dialect and the extra names, so the last
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
from sqlmend.sql import functions
from sqlmend.sql.dialects import resolve
from sqlmend.sql.parse import DIALECT_KEY, nested_too_deeply

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


def check_read_only(sql: str, dialect: str = "sqlite", extra: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """Refuse anything but a single read-only SELECT/WITH query.

    Args:
        sql: the SQL text.
        dialect: the dialect to parse with (``"sqlite"``, ``"postgres"``, ``"duckdb"``, ...).
        extra: functions allowed beside the dialect's list (lower case; the configuration's
            ``allow_functions``).

    Returns:
        The functions the query calls that the list does not know (usually none): the caller asks the
        engine whether it has them (:meth:`sqlmend.db.base.Database.execute` does).

    Raises:
        ReadOnlyViolation: the text is empty, holds several statements, or writes,
            changes the schema or session, touches files, or calls a function the list refuses.
    """
    if not sql or not sql.strip():
        raise ReadOnlyViolation("empty SQL")
    refusal, unknown = _refusal(sql, resolve(dialect), extra)
    if refusal is not None:
        raise ReadOnlyViolation(refusal)
    return unknown


#: How many (text, dialect) verdicts :func:`check_read_only` remembers.
VERDICT_CACHE_SIZE = 4096


def forget_verdicts() -> None:
    """Empty the in-memory cache of read-only verdicts (benchmarks that must start cold)."""
    _refusal.cache_clear()


@lru_cache(maxsize=VERDICT_CACHE_SIZE)
def _refusal(sql: str, read: str, extra: frozenset[str]) -> tuple[str | None, tuple[str, ...]]:
    """The reason ``sql`` is refused in dialect ``read`` (None when it is one read-only query), and the
    functions it calls that the list does not know."""
    try:
        return None, _judge(sql, read, extra)
    except ReadOnlyViolation as e:
        return str(e), ()


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


def _judge(sql: str, read: str, extra: frozenset[str]) -> tuple[str, ...]:
    # sqlglot warns when it falls back to exp.Command; muted by ``disabled`` (setLevel would
    # clear every logger's level cache on each call)
    if nested_too_deeply(sql):  # sqlglot's compiled parser would overflow the C stack on it
        raise ReadOnlyViolation("nested too deeply to check that it only reads")
    disabled, _log.disabled = _log.disabled, True
    try:
        statements = [s for s in _parse(sql, read) if s is not None]
    except (ParseError, TokenError):
        return _check_unparsed(sql, read, extra)
    except RecursionError:  # nested past what sqlglot's recursive parser can read: cannot be proven read-only
        raise ReadOnlyViolation("nested too deeply to check that it only reads") from None
    finally:
        _log.disabled = disabled
    if len(statements) != 1:
        raise ReadOnlyViolation(
            f"expected one statement, found {len(statements)}" if statements else "no statement")
    return _check_tree(statements[0], read, extra)


def check_read_only_tree(tree: exp.Expression, dialect: str | None = None,
                         extra: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """Refuse a parsed statement that is not a read-only SELECT/WITH query (no parsing).

    For a caller that already holds the one statement of a text (``sqlmend.sql.parse``):
    the same checks :func:`check_read_only` runs on the tree it parses.

    Args:
        tree: the statement's root node.
        dialect: the dialect its calls are named in (default: the one it was parsed with, else SQLite).
        extra: functions allowed beside the dialect's list.

    Returns:
        The functions it calls that the list does not know (see :func:`check_read_only`).

    Raises:
        ReadOnlyViolation: the root is not a query, or a node writes, changes the schema
            or session, touches files or calls a function the list refuses.
    """
    return _check_tree(tree, resolve(dialect or tree.meta.get(DIALECT_KEY) or "sqlite"), extra)


def is_read_only(sql: str, dialect: str = "sqlite") -> bool:
    """Return whether :func:`check_read_only` accepts ``sql`` with no engine to ask: a single read-only
    query that calls only functions on the dialect's list.

    Args:
        sql: the SQL text.
        dialect: the dialect to parse with.

    Returns:
        True when the text is a single read-only query.
    """
    try:
        return not check_read_only(sql, dialect)
    except ReadOnlyViolation:
        return False


def _check_tree(tree: exp.Expression, dialect: str, extra: frozenset[str]) -> tuple[str, ...]:
    if not isinstance(tree, QUERY_ROOTS):
        raise ReadOnlyViolation(f"not a query: {type(tree).__name__.upper()} statement refused")
    unknown: dict[str, None] = {}
    for node in tree.walk():
        checks = _CHECKS.get(type(node), _UNSEEN)
        if checks is _UNSEEN:
            checks = _CHECKS[type(node)] = _checks_of(type(node))
        if checks is None:  # most nodes: columns, identifiers, literals, operators
            continue
        refused, call, table = checks
        if refused:
            raise ReadOnlyViolation(refused)
        if call:
            name = functions.call_name(node, dialect)
            if name is not None and functions.verdict(name, dialect, extra) == functions.UNLISTED:
                unknown.setdefault(name, None)
        if table and _names_a_file(node):
            raise ReadOnlyViolation(f"reading from a file {node.this.sql()} is not allowed")
    return tuple(unknown)


_UNSEEN = object()
#: Node class -> what to check on its nodes (see :func:`_checks_of`), filled as classes are met.
_CHECKS: dict[type, tuple[str, bool, bool] | None] = {}


def _checks_of(cls: type) -> tuple[str, bool, bool] | None:
    """What a node of class ``cls`` needs: (refusal that holds for every such node, or "";
    whether it calls a function, checked against the dialect's list; whether it is a table), or None."""
    refused = ""
    if issubclass(cls, FORBIDDEN_NODES):
        refused = f"{cls.__name__.upper()} is not allowed in a read-only query"
    call = issubclass(cls, exp.Func)
    table = issubclass(cls, exp.Table)
    return (refused, call, table) if refused or call or table else None


def _names_a_file(table: exp.Table) -> bool:
    """A table given as a string or a path (DuckDB's replacement scans read such files)."""
    if isinstance(table.this, exp.Literal):
        return True
    name = table.name if isinstance(table.this, exp.Identifier) else ""
    return "/" in name or "\\" in name or name.lower().endswith(_FILE_SUFFIXES)


def _check_unparsed(sql: str, read: str, extra: frozenset[str]) -> tuple[str, ...]:
    """Judge a text sqlglot cannot parse from its tokens alone; return the names it calls that the
    list does not know (a word followed by ``(``: the engine may read it as a call)."""
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
    unknown: dict[str, None] = {}
    words = [t.text.lower() if t.token_type not in (TokenType.STRING, TokenType.NATIONAL_STRING) else "" for t in body]
    for i in range(len(words) - 2):  # MariaDB's sequences: NEXT VALUE FOR s, PREVIOUS VALUE FOR s
        if words[i] in ("next", "previous") and words[i + 1:i + 3] == ["value", "for"]:
            raise ReadOnlyViolation(functions.refusal(f"{words[i]} value for", read))
    for i, t in enumerate(body):
        if t.token_type in (TokenType.STRING, TokenType.NATIONAL_STRING):
            continue
        word = t.text.lower()
        if t.token_type in _WRITE_TOKENS or word in _WRITE_WORDS:
            raise ReadOnlyViolation(f"{t.text.upper()} is not allowed in a read-only query")
        if i + 1 < len(body) and body[i + 1].token_type == TokenType.L_PAREN:
            name = t.text if t.token_type == TokenType.IDENTIFIER and read in functions.CASE_SENSITIVE_QUOTED else word
            # a keyword before "(" (IN, EXISTS, VALUES) is grammar, unless the list refuses its name
            if functions.verdict(name, read, extra) == functions.UNLISTED and t.token_type in _NAME_TOKENS:
                unknown.setdefault(name, None)
    return tuple(unknown)


#: Tokens that name a function when a ``(`` follows (keywords such as IN, EXISTS, VALUES do not).
_NAME_TOKENS = frozenset({TokenType.VAR, TokenType.IDENTIFIER})
