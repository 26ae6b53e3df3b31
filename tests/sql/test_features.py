"""sql.features on fixtures/features.yaml, and SQLite's comparison rules checked in SQLite."""

from __future__ import annotations

import sqlite3

import pytest
from sql_cases import cases
from test_normalize import sqlite_schema

from sqlmend import sql


def _actual(f: sql.Features, key: str):
    if key == "tables":
        return [[t.name, t.alias, t.scope] for t in f.tables]
    if key == "columns":
        return {k: [c.qualified for c in v] for k, v in f.columns.items()}
    if key == "literals":
        return [[r.value, r.op, r.column.qualified if r.column else None, r.case_sensitive] for r in f.literals]
    if key == "aggregates":
        return [[a.func, a.distinct, a.column.qualified if a.column else None] for a in f.aggregates]
    if key == "joins":
        return [[j.table.name, j.kind, [list(p) for p in j.pairs]] for j in f.joins]
    if key == "subqueries":
        return [s.kind for s in f.subqueries]
    if key == "group_by":
        return [g.sql() for g in f.group_by]
    if key == "order_by":
        return [[e.sql(), desc] for e, desc in f.order_by]
    return getattr(f, key)


@pytest.mark.parametrize("case", cases("features"))
def test_features_case(case, spider_db):
    f = sql.features(sql.parse(case["sql"]), sqlite_schema(spider_db(case["db"])))
    for key, expected in case["expect"].items():
        got = _actual(f, key)
        if key == "columns":
            got = {k: v for k, v in got.items() if k in expected}
        assert got == expected, key


def test_nodes_belong_to_the_input_tree(spider_db):
    tree = sql.parse('SELECT name FROM singer WHERE country = "France"')
    f = sql.features(tree, sqlite_schema(spider_db("concert_singer")))
    nodes = {id(n) for n in tree.walk()}
    assert all(id(r.node) in nodes for r in f.literals + f.all_columns())
    assert f.literals[0].quoted_identifier and f.literals[0].node.sql() == '"France"'


@pytest.mark.parametrize("predicate", ["name = 'joe sharp'", "name LIKE 'joe sharp'",
                                       "name GLOB 'joe sharp'", "name IN ('joe sharp')"])
def test_case_sensitivity_matches_sqlite(predicate, spider_db):
    path = spider_db("concert_singer")
    lit = sql.features(f"SELECT count(*) FROM singer WHERE {predicate}", sqlite_schema(path)).literals[0]
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        # the stored name is 'Joe Sharp': only a case-insensitive comparison finds it
        found = con.execute(f"SELECT count(*) FROM singer WHERE {predicate}").fetchone()[0] > 0
    assert lit.case_sensitive == (not found)
