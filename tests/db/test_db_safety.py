"""The read-only AST check (sqlmend.sql.safety) on its own."""

from __future__ import annotations

import pytest

from sqlmend.errors import ReadOnlyViolation
from sqlmend.sql.safety import check_read_only, is_read_only

ALLOWED = [
    ("SELECT name FROM singer WHERE country = \"France\"", "sqlite"),  # Spider's double-quoted string
    ("WITH t AS (SELECT 1 AS x) SELECT x FROM t", "sqlite"),
    ("SELECT a FROM t UNION SELECT b FROM u ORDER BY 1 LIMIT 3", "sqlite"),
    ("SELECT replace(name, 'a', 'b') FROM singer WHERE name GLOB 'J*'", "sqlite"),
    ("VALUES (1, 2)", "sqlite"),
    ("SELECT * FROM generate_series(1, 3)", "postgres"),
    ("SELECT * FROM range(3)", "duckdb"),
    ("SELECT 1;", "sqlite"),  # a trailing semicolon is still one statement
]


@pytest.mark.parametrize("sql,dialect", ALLOWED)
def test_queries_pass(sql, dialect):
    check_read_only(sql, dialect)


def test_syntax_errors_reach_the_engine_unless_they_look_like_writes():
    # a broken prediction must fail in the engine, with the engine's message
    assert is_read_only("SELECT name FROM singer WHERE", "sqlite")
    assert is_read_only("SELECT count( FROM singer", "sqlite")
    assert not is_read_only("SELECT 1 FROM t WHERE (; DELETE FROM t", "sqlite")
    assert not is_read_only("SELECT * FROM ( INSERT INTO t VALUES (1)", "sqlite")
    assert not is_read_only("SELEC 1", "sqlite")


@pytest.mark.parametrize("sql", [
    "SELECT * FROM t WHERE x IN (SELECT load_extension('x'))",
    "SELECT upper(pg_read_file('/etc/hostname'))",
    "SELECT * FROM t JOIN read_parquet('x.parquet') p ON TRUE",
    "SELECT * FROM \"data/file.csv\"",
    "WITH d AS (UPDATE t SET a = 1 RETURNING a) SELECT * FROM d",
])
def test_nested_writes_and_file_reads_are_refused(sql):
    # refused outright, or (a function another engine has, unknown to this dialect's list) left for
    # the engine to say whether it has one: never accepted on the text alone
    for dialect in ("sqlite", "postgres", "duckdb"):
        assert not is_read_only(sql, dialect)
