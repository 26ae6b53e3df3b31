"""sql.parse / sql.render / sql.transpile on the cases of fixtures/parse.yaml and real Spider SQL."""

from __future__ import annotations

import sqlite3

import pytest
from sql_cases import cases

from sqlmend import sql
from sqlmend.errors import SqlError, SqlmendError, SqlParseError


@pytest.mark.parametrize("case", cases("parse"))
def test_parse_case(case):
    if "error" in case:
        with pytest.raises(SqlParseError) as info:
            sql.parse(case["sql"])
        assert case["error"] in str(info.value)
        for key in ("line", "col"):
            if key in case:
                assert getattr(info.value, key) == case[key]
        return
    tree = sql.parse(case["sql"])
    assert type(tree).__name__ == case["root"]
    assert isinstance(tree, sql.ast.Expression)
    assert sql.render(tree) == case["sql"]
    assert sql.render(tree, original=case["sql"]) == case["sql"]


def test_render_changed_tree_gives_new_text_and_leaves_original_alone():
    text = "select  Name from singer WHERE Age > 30"
    tree = sql.parse(text)
    edited = tree.copy()
    edited.find(sql.ast.GT).set("expression", sql.ast.Literal.number(40))
    assert sql.render(edited) == "SELECT Name FROM singer WHERE Age > 40"
    assert sql.render(tree) == text


def test_render_case_change_counts_as_change():
    tree = sql.parse("SELECT name FROM singer WHERE country = 'france'")
    tree.find(sql.ast.Literal).set("this", "France")
    assert "'France'" in sql.render(tree)


def test_render_hand_built_tree():
    tree = sql.ast.select("a").from_("t").where("b = 1")
    assert sql.render(tree) == "SELECT a FROM t WHERE b = 1"


def test_transpile_to_postgres_keeps_sqlite_null_order(spider_db):
    text = "SELECT name FROM singer WHERE country = 'France' ORDER BY age DESC LIMIT 2"
    pg = sql.transpile(text, read="sqlite", write="postgres")
    # SQLite sorts NULLs first ascending, last descending: sqlglot spells that out for PostgreSQL
    assert pg == "SELECT name FROM singer WHERE country = 'France' ORDER BY age DESC NULLS LAST LIMIT 2"
    with sqlite3.connect(spider_db("concert_singer")) as con:
        assert con.execute(text).fetchall() == con.execute(pg).fetchall()


def test_transpile_with_a_schema_writes_sqlites_double_quoted_strings_as_strings():
    schema = {"singer": {"name": "text", "country": "text"}}
    text = 'SELECT "name" FROM singer WHERE country = "France" OR "name" = "x"'
    assert sql.transpile(text, read="sqlite", write="mysql", schema=schema) == (
        "SELECT `name` FROM singer WHERE country = 'France' OR `name` = 'x'")
    assert "`France`" in sql.transpile(text, read="sqlite", write="mysql")  # sqlglot's reading: a name


def test_transpile_names_the_derived_tables_mysql_requires(spider_db):
    text = "SELECT count(*) FROM (SELECT name FROM singer UNION SELECT name FROM stadium) WHERE name > 'B'"
    my = sql.transpile(text, read="sqlite", write="mysql")
    assert my == ("SELECT COUNT(*) FROM (SELECT name FROM singer UNION SELECT name FROM stadium) AS derived_1 "
                  "WHERE name > 'B'")
    with sqlite3.connect(spider_db("concert_singer")) as con:  # SQLite reads the alias too
        assert con.execute(text).fetchall() == con.execute(my.replace("COUNT", "count")).fetchall()


def test_transpile_bad_sql_raises():
    with pytest.raises(SqlError):
        sql.transpile("SELECT FROM", read="sqlite", write="postgres")


def test_unknown_dialect_is_a_config_error():
    from sqlmend.errors import ConfigError
    with pytest.raises(ConfigError):
        sql.parse("SELECT 1", dialect="oracle9000")


def test_sqlglot_own_warnings_stay_quiet(caplog):
    """sqlglot's 'Falling back to parsing as a Command' warning never reaches the user's terminal."""
    try:
        sql.parse("CREATE TABLE x (a int) WITH FOO")
    except SqlmendError:
        pass
    assert not [r for r in caplog.records if r.name.startswith("sqlglot")]
