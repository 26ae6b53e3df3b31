"""What the database's value index says about a compared literal.

The value rules ask three questions about a literal the data disproves; the
value index (``db.value_index()``: distinct text values per column, built once
and cached on disk, microsecond lookups) answers them without a query:

* :func:`spellings`: the stored values equal to it up to case and surrounding
  spaces ('Aberdeen' -> 'Aberdeen '); :func:`case_only` tells a case spelling
  (VL01) from one with other spaces (VL06);
* :func:`variants`: the stored values it is another form of: singular/plural
  ('Bachelors' -> 'Bachelor'), an abbreviation or initials in either direction
  ('female' -> 'F', 'USA' -> 'United States of America'), a word prefix of the
  stored value ('2010-05-01' -> '2010-05-01 00:00:00'), or the same number
  written differently ('1,000' -> '1000');
* :func:`accent_variants`: the stored values equal to it once accents are folded ('Sao Paulo' ->
  'São Paulo');
* :func:`holders`: the other columns that store it.

:func:`index_decides` says when the index alone can tell whether
``column = literal`` matches a row (the engine's comparison rules make it the
same as a text lookup); elsewhere the rules ask the engine (:mod:`.probe`).
"""

from __future__ import annotations

import re
from typing import Any

from sqlmend.db import ValueMatch

#: Declared types whose columns hold text (lower-case substrings).
TEXT_TYPES = ("char", "text", "clob", "string")
#: A code column: at most this many distinct values, none longer than CODE_LEN characters.
CODE_VALUES, CODE_LEN = 50, 3
#: A literal expanded by prefix must be at least this long (shorter: too many readings).
MIN_PREFIX = 3

_WORD = re.compile(r"\w+", re.UNICODE)


def sqlite_affinity(declared: str) -> str:
    """SQLite's column affinity for a declared type (https://sqlite.org/datatype3.html §3.1).

    Args:
        declared: the declared column type.

    Returns:
        ``"integer"``, ``"text"``, ``"blob"``, ``"real"`` or ``"numeric"``.
    """
    low = (declared or "").lower()
    if "int" in low:
        return "integer"
    if any(t in low for t in ("char", "clob", "text")):
        return "text"
    if not low or "blob" in low:
        return "blob"
    if any(t in low for t in ("real", "floa", "doub")):
        return "real"
    return "numeric"


def as_number(value: Any) -> float | None:
    """The number a value writes (``'1,000'`` -> 1000.0), or ``None``.

    Args:
        value: a literal or a stored value.

    Returns:
        The number, or ``None`` for booleans, non-numeric text and NaN/infinity.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip().replace(",", "")
    if not text or not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
        return None
    return float(text)


def _indexed(vi: Any, table: str, column: str) -> bool:
    return bool(vi.size(table, column)) and not vi.is_partial(table, column)


def index_decides(ctx: Any, table: str, column: str, value: Any) -> bool:
    """Whether the value index alone tells if ``table.column = value`` matches a row.

    True for a string literal and a column whose every distinct text value is
    indexed, when the engine compares the two as text: SQLite with a TEXT or
    BLOB affinity column, or a literal that is no number (a NUMERIC column would
    turn '12' into 12); other engines with a text-typed column.

    Args:
        ctx: the rule context.
        table: schema table.
        column: schema column.
        value: the literal's Python value.

    Returns:
        True when ``vi.contains`` answers the question exactly.
    """
    vi = ctx.values
    if vi is None or not isinstance(value, str) or not _indexed(vi, table, column):
        return False
    schema_table = ctx.schema.table(table)
    col = schema_table.column(column) if schema_table else None
    if col is None:
        return False
    if ctx.dialect == "sqlite":
        return sqlite_affinity(col.type) in ("text", "blob") or as_number(value) is None
    return any(t in (col.type or "").lower() for t in TEXT_TYPES)


#: Pairs of (true, false) spellings a text flag column may store, compared case-insensitively.
FLAG_PAIRS = (("t", "f"), ("y", "n"), ("yes", "no"), ("true", "false"), ("1", "0"))


def stored_flag(stored: list[str], truth: bool) -> str | None:
    """The stored spelling of ``truth`` in a column whose distinct values are ``stored``, when they
    are one pair of :data:`FLAG_PAIRS` (or one member of it); else None.

    >>> stored_flag(["T", "F"], True), stored_flag(["no", "yes"], False), stored_flag(["A", "B"], True)
    ('T', 'no', None)
    """
    folded = {v.strip().casefold(): v for v in stored}
    if not folded:
        return None
    for pair in FLAG_PAIRS:
        if set(folded) <= set(pair):
            want = pair[0] if truth else pair[1]
            return folded.get(want)
    return None


def holds_text(col: Any) -> bool:
    """Whether a schema column may hold text: untyped (SQLite), or of a text type."""
    return not col.type or any(t in col.type.lower() for t in TEXT_TYPES)


def case_only(literal: str, stored: str) -> bool:
    """Whether a stored spelling differs from the literal only in letter case (not in spaces)."""
    return literal.casefold() == stored.casefold()


def _memo(fn: Any) -> Any:
    """Answer a lookup once per rule context and arguments (the value rules ask the same literal
    several times; an IN list may repeat it): a copy of the first answer after that."""
    name = fn.__name__

    def memoized(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        memo = getattr(ctx, "memo", None)
        if memo is None:
            return fn(ctx, *args, **kwargs)
        key = (name, args, *kwargs.items()) if kwargs else (name, args)
        try:
            found = memo.get(key)
        except TypeError:  # an argument that cannot be a key
            return fn(ctx, *args, **kwargs)
        if found is None:
            found = memo[key] = fn(ctx, *args, **kwargs)
        return list(found)

    memoized.__doc__, memoized.__name__, memoized.__wrapped__ = fn.__doc__, name, fn
    return memoized


@_memo
def spellings(ctx: Any, table: str, column: str, value: Any, limit: int = 5) -> list[str]:
    """Stored values of a column equal to ``value`` up to case and surrounding spaces.

    Args:
        ctx: the rule context.
        table: schema table.
        column: schema column.
        value: the literal (only text literals have spellings).
        limit: most values returned.

    Returns:
        The stored values other than ``value`` itself, as the database holds them.
    """
    vi = ctx.values
    if vi is None or not isinstance(value, str):
        return []
    return [v for v in vi.find(table, column, value, mode="trim", limit=limit + 1) if v != value][:limit]


def accent_variants(ctx: Any, table: str, column: str, value: Any, limit: int = 3) -> list[str]:
    """Stored values of a column equal to ``value`` once accents are folded (and up to case and
    surrounding spaces), other than ``value`` itself ('Sao Paulo' -> 'São Paulo')."""
    vi = ctx.values
    if vi is None or not isinstance(value, str) or not value.strip():
        return []
    return [v for v in vi.find(table, column, value, mode="accent", limit=limit + 1) if v != value][:limit]


@_memo
def holders(ctx: Any, value: Any, exclude: tuple[str, str] | None = None,
            limit: int = 5) -> list[ValueMatch]:
    """Columns of the database that store ``value`` (up to case and surrounding spaces).

    Args:
        ctx: the rule context.
        value: the literal's text.
        exclude: a ``(table, column)`` to skip (the one the query compares).
        limit: most holders returned.

    Returns:
        One match per holding column (table, column, stored value).
    """
    vi = ctx.values
    if vi is None or not isinstance(value, str) or not value.strip():
        return []
    skip = (exclude[0].lower(), exclude[1].lower()) if exclude else None
    out: list[ValueMatch] = []
    seen: set[tuple[str, str]] = set()
    for m in vi.search(value, mode="trim", limit=limit * 4 + 4):
        key = (m.table.lower(), m.column.lower())
        if key == skip or key in seen:
            continue
        seen.add(key)
        out.append(m)
    return out[:limit]


def _word_prefix(literal: str, stored: str) -> bool:
    """``stored`` starts with ``literal`` and the next character ends a word."""
    lit, full = literal.strip().casefold(), stored.strip().casefold()
    if len(lit) < MIN_PREFIX or not full.startswith(lit) or len(full) == len(lit):
        return False
    return not full[len(lit)].isalnum()


def _initials(text: str) -> str:
    words = _WORD.findall(text.casefold())
    return "".join(w[0] for w in words) if len(words) > 1 else ""


def _abbreviates(code: str, literal: str) -> bool:
    """Whether a short stored code abbreviates the literal ('F' / 'female', 'NC' / 'North Carolina')."""
    short, lit = code.strip().casefold(), literal.strip().casefold()
    if not short or len(lit) <= len(short):
        return False
    words = _WORD.findall(lit)
    if len(words) == 1:
        return lit.startswith(short)
    return short == _initials(lit)


@_memo
def variants(ctx: Any, table: str, column: str, value: Any, limit: int = 5) -> list[tuple[str, str]]:
    """Stored values of a column that ``value`` is another form of (see the module docstring).

    Args:
        ctx: the rule context.
        table: schema table.
        column: schema column.
        value: the literal (text or number).
        limit: most variants returned.

    Returns:
        ``(stored value, kind)`` pairs, kind one of ``plural``, ``punctuation``,
        ``abbreviation``, ``prefix``, ``number_format``; spellings up to case/spaces are not included.
    """
    vi = ctx.values
    if vi is None:
        return []
    stored = vi.stored(table, column)
    if not stored:
        return []
    found: dict[str, str] = {}
    number = as_number(value)
    if number is not None:
        for v in stored:
            if v != str(value) and as_number(v) == number:
                found.setdefault(v, "number_format")
    if isinstance(value, str) and value.strip() and number is None:
        close = set(spellings(ctx, table, column, value, limit=50)) | {value}
        for m in vi.matches(table, column, value, modes=("plural", "prefix"), limit=limit + 5):
            if m.value in close:
                continue
            if m.mode == "plural":
                same_words = _WORD.findall(m.value.casefold()) == _WORD.findall(value.casefold())
                found.setdefault(m.value, "punctuation" if same_words else "plural")
            elif _initials(m.value) == value.strip().casefold():
                found.setdefault(m.value, "abbreviation")
            elif _word_prefix(value, m.value):
                found.setdefault(m.value, "prefix")
        if len(stored) <= CODE_VALUES and all(len(v.strip()) <= CODE_LEN for v in stored):
            for v in stored:
                if v not in close and _abbreviates(v, value):
                    found.setdefault(v, "abbreviation")
    return list(found.items())[:limit]
