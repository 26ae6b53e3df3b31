"""sql.normalize and output aliases: what the qualifier adds, ORDER BY references (checked on SQLite)."""

from __future__ import annotations

import sqlite3

import pytest

from sqlmend import sql

SCHEMA = {"teacher": {"teacher_id": "int", "name": "text", "hometown": "text", "age": "int"}}


def test_order_by_expression_stays_an_expression():
    """The qualifier's ``ORDER BY _col_1`` is undone: same ORDER BY, same normalized item."""
    a = sql.normalize("SELECT hometown, COUNT(*) FROM teacher GROUP BY hometown ORDER BY COUNT(*) DESC", SCHEMA)
    assert sql.render(a).endswith("ORDER BY COUNT(*) DESC")
    edits = sql.diff("SELECT hometown, COUNT(*) FROM teacher GROUP BY hometown ORDER BY COUNT(*) DESC",
                     "SELECT hometown FROM teacher GROUP BY hometown ORDER BY COUNT(*) DESC", SCHEMA)
    assert [(e.kind, e.clause) for e in edits] == [("remove", "select")]


def test_written_alias_reference_kept_by_default():
    tree = sql.normalize("SELECT hometown, COUNT(*) AS n FROM teacher GROUP BY hometown ORDER BY n DESC", SCHEMA)
    assert sql.render(tree).endswith("ORDER BY n DESC")


@pytest.mark.parametrize("text,expected", [
    ("SELECT hometown, COUNT(*) AS n FROM teacher GROUP BY hometown ORDER BY n DESC",
     "SELECT teacher.hometown, COUNT(*) AS n FROM teacher AS teacher GROUP BY teacher.hometown ORDER BY COUNT(*) DESC"),
    ("SELECT name FROM teacher ORDER BY name",
     "SELECT teacher.name FROM teacher AS teacher ORDER BY teacher.name"),
    ("SELECT COUNT(*), T.hometown FROM teacher AS T GROUP BY T.hometown",
     "SELECT COUNT(*), teacher.hometown FROM teacher AS teacher GROUP BY teacher.hometown"),
    ("SELECT name FROM teacher WHERE age > (SELECT AVG(age) FROM teacher)",
     "SELECT teacher.name FROM teacher AS teacher WHERE teacher.age > (SELECT AVG(teacher_2.age) "
     "FROM teacher AS teacher_2)"),
])
def test_without_output_aliases(text, expected, spider_db):
    out = sql.render(sql.normalize(text, SCHEMA, output_aliases=False))
    assert out == expected
    with sqlite3.connect(f"file:{spider_db('course_teach')}?mode=ro", uri=True) as con:
        assert sorted(con.execute(out).fetchall()) == sorted(con.execute(text).fetchall())
