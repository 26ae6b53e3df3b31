"""How wide a query is: the most tables one SELECT joins.

SQLite refuses more than 64 tables in a join; PostgreSQL's and DuckDB's planners take them all and
order them without looking at their time limit (200 joins: 6-88 s past it), so
:class:`sqlmend.db.base.Database` refuses a wider query on those engines before they see it.

>>> from sqlmend.sql.parse import parse
>>> join_width(parse("SELECT 1 FROM a JOIN b ON a.x = b.x, c WHERE a.y IN (SELECT y FROM d)"))
3
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from sqlglot import exp

from sqlmend.errors import SqlError
from sqlmend.sql.parse import parse


def join_width(tree: Any) -> int:
    """The most tables one SELECT of ``tree`` joins (its FROM and its joins, comma joins included)."""
    return max((1 + len(s.args.get("joins") or []) for s in tree.find_all(exp.Select)), default=0)


@lru_cache(maxsize=4096)
def text_join_width(sql: str, dialect: str) -> int:
    """:func:`join_width` of a text (0 when it does not parse: the engine then says why)."""
    try:
        return join_width(parse(sql, dialect=dialect))
    except SqlError:
        return 0
