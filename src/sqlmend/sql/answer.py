"""The SQL in a model's raw answer: a markdown fence, or a sentence around the query.

A model asked for SQL often answers ``"```sql\\nSELECT ...;\\n```"`` or ``"Here is the query:
SELECT ...; It counts ..."``. :func:`extract` takes the statement out: the content of the fenced
blocks, or the text from the first statement keyword that starts a statement to the end of that
statement (a ``;``, a blank line or the end of a sentence), without its trailing ``;``.

It never makes one read-only query out of something else: every statement found is kept (two
statements, or a write, stay what they are, and the safety check refuses them), a text that
starts as SQL is never cut in its middle, and a text that already parses as one statement is not
touched (a plain query with a trailing ``;`` stays as written).

>>> extract("```sql\\nSELECT name FROM singer;\\n```").sql
'SELECT name FROM singer'
>>> extract("Here is the query: SELECT count(*) FROM city WHERE District = 'Texas'; it counts them.").sql
"SELECT count(*) FROM city WHERE District = 'Texas'"
>>> extract("SELECT name FROM singer;") is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlmend.errors import SqlParseError
from sqlmend.sql.foreign import MAX_READ_CHARS, READERS
from sqlmend.sql.parse import parse

#: A fenced block: ``` or ~~~, an optional language tag, the content, the closing fence (or the end).
_FENCE = re.compile(r"(```|~~~)[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n?(.*?)(?:\1|\Z)", re.S)
#: Language tags of a fenced block that may hold SQL (an empty tag too).
_SQL_TAGS = {"", "sql", "sqlite", "postgres", "postgresql", "psql", "mysql", "tsql", "mssql", "plsql", "duckdb",
             "oracle", "snowflake", "bigquery", "mariadb", "pgsql"}
#: Words that start a statement (a read or anything else: a write found is kept, and refused later).
_STATEMENT = re.compile(
    r"\b(SELECT|WITH|VALUES|INSERT|UPDATE|DELETE|REPLACE|MERGE|UPSERT|CREATE|DROP|ALTER|TRUNCATE|PRAGMA|ATTACH|"
    r"DETACH|VACUUM|REINDEX|ANALYZE|GRANT|REVOKE|EXEC|EXECUTE|CALL|COPY|LOAD|INSTALL|SET|BEGIN|COMMIT|ROLLBACK)\b",
    re.I)
#: Quoted strings and identifiers, and comments: where a ``;`` or a ``.`` ends nothing.
_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\[[^\]]*\]|--[^\n]*|/\*.*?(?:\*/|$)", re.S)


#: Places where a statement may start that are tried at most (each is parsed in several dialects).
MAX_STARTS = 8


@dataclass(frozen=True)
class Extraction:
    """The SQL taken out of a raw answer, and how."""

    sql: str
    how: str  # "fence" (a markdown code block) or "prose" (a sentence before or after the query)
    semicolon: bool  # a trailing ';' was dropped
    statements: int  # statements kept (more than one: refused later, as written)


def _parses(text: str, dialect: str) -> bool:
    """Whether ``text`` parses as one statement in ``dialect`` or (a text of at most
    :data:`~sqlmend.sql.foreign.MAX_READ_CHARS`) in one of the dialects sqlmend reads."""
    for d in (dialect, *(READERS if len(text) <= MAX_READ_CHARS else ())):
        try:
            parse(text, d)
            return True
        except SqlParseError:
            continue
    return False


def _masked(text: str) -> str:
    """``text`` with quoted strings, identifiers and comments blanked (same length)."""
    return _QUOTED.sub(lambda m: " " * len(m.group()), text)


def _end_of_statement(text: str) -> int:
    """Where the statement that starts ``text`` ends: at its ``;``, a blank line, or a sentence's
    end (``. `` followed by a letter) outside quotes; the length of the text when none."""
    masked = _masked(text)
    ends = [m.start() for m in (re.search(r";", masked), re.search(r"\n[ \t]*\n", masked),
                                 re.search(r"\.(?=\s+[A-Za-z]|\s*$)", masked)) if m]
    return min(ends) if ends else len(text)


def _statements(text: str) -> list[str]:
    """The statements that start ``text`` (which starts with a statement keyword): the first, then
    each one that follows it (after a ``;``: any statement keyword; after a blank line or a
    sentence's end: one in capitals); the prose after them is left out."""
    out: list[str] = []
    rest = text
    while rest:
        end = _end_of_statement(rest)
        piece = rest[:end].strip()
        if piece:
            out.append(piece)
        after_semicolon = rest[end:end + 1] == ";"
        rest = rest[end:].lstrip(";.").lstrip()
        nxt = _STATEMENT.match(rest)
        if nxt is None or not (after_semicolon or nxt.group().isupper()):
            break
    return out


def _from_sql_start(text: str, dialect: str) -> list[str] | None:
    """The statements of ``text`` from its first statement keyword that starts a statement that
    parses (in the target dialect or another), or None."""
    masked = _masked(text)
    starts = [m.start() for m in _STATEMENT.finditer(masked)]
    upper = [s for s in starts if text[s:s + 1].isupper()]  # models write SQL keywords in capitals
    for start in [*upper, *(s for s in starts if s not in upper)][:MAX_STARTS]:
        pieces = _statements(text[start:])
        if pieces and _parses(pieces[0], dialect):
            return pieces
    return None


def extract(text: str, dialect: str = "sqlite") -> Extraction | None:
    """The SQL in a model's raw answer, or None when ``text`` is no raw answer (see the module doc).

    Args:
        text: what the model (or the user) gave.
        dialect: the database's dialect (a statement is recognised when it parses in it or in
            another dialect sqlmend reads: :data:`sqlmend.sql.foreign.READERS`).

    Returns:
        The extraction, or None: the text parses as one statement already, holds no statement,
        or starts as SQL and has nothing after its statements but ``;`` and spaces.
    """
    if not isinstance(text, str) or not text.strip():
        return None
    stripped = text.strip()
    blocks = [m.group(3) for m in _FENCE.finditer(stripped) if m.group(2).lower() in _SQL_TAGS
              and _STATEMENT.search(_masked(m.group(3)))]
    if blocks:
        pieces = [p for b in blocks for p in (_from_sql_start(b, dialect) or [b.strip().rstrip(";").strip()])]
        how = "fence"
    else:
        try:
            parse(stripped, dialect)
            return None  # one statement already (a trailing ';' and comments are fine)
        except SqlParseError:
            pass
        if _STATEMENT.match(stripped):  # starts as SQL: only what follows its statements may go
            pieces = _statements(stripped)
            if not pieces or _bare(";".join(pieces)) == _bare(stripped) or not _parses(pieces[0], dialect):
                return None
        else:
            pieces = _from_sql_start(stripped, dialect) or []
        how = "prose"
    pieces = [p for p in pieces if p]
    if not pieces:
        return None
    sql = ";\n".join(pieces)
    if how == "prose" and _bare(sql) == _bare(stripped):
        return None  # only the separators of the statements written differ: nothing was taken out
    semicolon = any(re.match(r"\s*;", stripped[i + len(p):]) for p in pieces if (i := stripped.find(p)) >= 0)
    return Extraction(sql=sql, how=how, semicolon=semicolon, statements=len(pieces))


def _bare(text: str) -> str:
    return re.sub(r"[\s;]+", "", text)


__all__ = ["Extraction", "extract"]
