"""sql.normalize on fixtures/normalize.yaml, checked against SQLite itself."""

from __future__ import annotations

import sqlite3
from collections import Counter

import pytest
from sql_cases import cases

from sqlmend import errors, sql


def sqlite_schema(path) -> dict[str, dict[str, str]]:
    """``{table: {column: type}}`` read from a SQLite file with plain sqlite3."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        tables = [t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: {r[1]: r[2] for r in con.execute(f'PRAGMA table_info("{t}")')} for t in tables}


@pytest.mark.parametrize("case", cases("normalize"))
def test_normalize_case(case, spider_db):
    path = spider_db(case["db"])
    schema = sqlite_schema(path)
    if "error" in case:
        with pytest.raises(getattr(errors, case["error"])) as info:
            sql.normalize(case["sql"], schema)
        for candidate in case.get("candidates", []):
            assert candidate in info.value.candidates
        return
    tree = sql.normalize(case["sql"], schema)
    text = sql.render(tree)
    assert text == case["expected"]
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        assert Counter(con.execute(case["sql"]).fetchall()) == Counter(con.execute(text).fetchall())


def test_alias_only_difference_normalizes_equal(spider_db):
    schema = sqlite_schema(spider_db("concert_singer"))
    a = sql.normalize("SELECT T1.Name FROM singer AS T1 WHERE T1.Age > 30", schema)
    b = sql.normalize('select s."name" from SINGER s where age > 30', schema)
    assert a == b


def test_normalize_does_not_change_its_input(spider_db):
    schema = sqlite_schema(spider_db("concert_singer"))
    text = 'SELECT name FROM singer WHERE country = "France"'
    tree = sql.parse(text)
    sql.normalize(tree, schema)
    assert sql.render(tree) == text


def test_without_schema_only_aliases_change():
    tree = sql.normalize("SELECT T1.a FROM t AS T1 JOIN u AS T2 ON T1.id = T2.id", None)
    assert sql.render(tree) == "SELECT t.a AS a FROM t AS t JOIN u AS u ON t.id = u.id"
