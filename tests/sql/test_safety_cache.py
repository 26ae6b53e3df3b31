"""The read-only check remembers its verdicts by (text, dialect) without changing any of them."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from sqlmend.errors import ReadOnlyViolation
from sqlmend.sql import safety
from sqlmend.sql.safety import check_read_only, forget_verdicts, is_read_only

TEXTS = [
    "SELECT name FROM singer WHERE age > 30",
    "WITH t AS (SELECT 1 AS x) SELECT x FROM t",
    "DELETE FROM singer",
    "SELECT 1; DROP TABLE singer",
    "SELECT * FROM t WHERE x IN (SELECT load_extension('x'))",
    "SELECT * FROM \"data/file.csv\"",
    "SELECT count( FROM singer",  # unparsable, passed on to the engine
    "SELEC 1",
    "ATTACH 'x.db' AS x",
    "SELECT a FROM t UNION SELECT b FROM u ORDER BY 1 LIMIT 3",
]


def _verdict(sql: str, dialect: str = "sqlite") -> str | None:
    try:
        check_read_only(sql, dialect)
    except ReadOnlyViolation as e:
        return str(e)
    return None


def test_a_refusal_is_repeated_from_the_cache_with_the_same_message():
    forget_verdicts()
    with pytest.raises(ReadOnlyViolation) as first:
        check_read_only("DELETE FROM singer")
    misses = safety._refusal.cache_info().misses
    with pytest.raises(ReadOnlyViolation) as second:
        check_read_only("DELETE FROM singer")
    info = safety._refusal.cache_info()
    assert str(first.value) == str(second.value) and "DELETE" in str(second.value)
    assert (info.misses, info.hits) == (misses, 1)


def test_the_dialect_is_part_of_the_key():
    forget_verdicts()
    sql = "SELECT name FROM singer"
    check_read_only(sql, "sqlite")
    check_read_only(sql, "duckdb")
    check_read_only(sql, "postgresql")
    check_read_only(sql, "postgres")  # the same dialect under its sqlglot name
    info = safety._refusal.cache_info()
    assert (info.misses, info.hits) == (3, 1)


def test_empty_text_is_refused_before_the_cache():
    forget_verdicts()
    assert not is_read_only("  ")
    assert safety._refusal.cache_info().currsize == 0


def test_cached_verdicts_equal_fresh_ones_across_threads():
    forget_verdicts()
    fresh = [_verdict(t) for t in TEXTS]
    assert fresh[0] is None and fresh[2] is not None and fresh[6] is None
    forget_verdicts()
    with ThreadPoolExecutor(max_workers=4) as pool:  # each thread parses with its own parser
        rounds = list(pool.map(lambda _: [_verdict(t) for t in TEXTS], range(8)))
    assert all(r == fresh for r in rounds)
