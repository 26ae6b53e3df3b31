"""Read an engine's error message: what kind of failure, and the name it is about.

Messages differ by engine; each kind lists the patterns of SQLite, PostgreSQL
and DuckDB. Kinds: ``syntax``, ``unknown_column``, ``ambiguous_column``,
``unknown_table``, ``aggregate_misuse``, ``function``, ``timeout``, ``other``.

>>> classify("no such column: T1.Make")
('unknown_column', 'T1.Make')
>>> classify('column reference "id" is ambiguous')
('ambiguous_column', 'id')
"""

from __future__ import annotations

import re

_PATTERNS: list[tuple[str, re.Pattern]] = [
    ("timeout", re.compile(r"^timeout|interrupted|canceling statement due to statement timeout", re.I)),
    ("unknown_column", re.compile(r"no such column: (\S+)|column \"?([^\"\s]+)\"? does not exist|"
                                  r"Referenced column \"([^\"]+)\" not found", re.I)),
    ("ambiguous_column", re.compile(r"ambiguous column name: (\S+)|column reference \"([^\"]+)\" is "
                                    r"ambiguous|Ambiguous reference to column name \"([^\"]+)\"", re.I)),
    ("unknown_table", re.compile(r"no such table: (\S+)|relation \"([^\"]+)\" does not exist|"
                                 r"Table with name (\S+) does not exist", re.I)),
    ("aggregate_misuse", re.compile(r"misuse of aggregate(?: function)? (\w+)|aggregate function "
                                    r"calls cannot be nested|aggregate functions are not allowed",
                                    re.I)),
    ("function", re.compile(r"no such function: (\w+)|wrong number of arguments to function (\w+)|"
                            r"function (\w+)\(.*\) does not exist", re.I)),
    ("syntax", re.compile(r"syntax error|parser error|incomplete input|unrecognized token", re.I)),
]


def classify(message: str | None) -> tuple[str, str]:
    """Classify an engine error message.

    Args:
        message: the engine's message (``None`` or empty: no failure).

    Returns:
        ``(kind, name)``: the failure kind and the identifier it names ("" when none).
    """
    if not message:
        return ("", "")
    for kind, pattern in _PATTERNS:
        m = pattern.search(message)
        if m:
            name = next((g for g in m.groups() if g), "")
            return (kind, name.rstrip("(").strip("'\""))
    return ("other", "")
