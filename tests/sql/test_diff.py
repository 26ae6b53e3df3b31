"""sql.diff on fixtures/diff.yaml, and the edits of real wrong predictions against Spider gold."""

from __future__ import annotations

import json

import pytest
from sql_cases import cases
from test_normalize import sqlite_schema

from sqlmend import sql
from sqlmend.errors import SqlmendError
from sqlmend.types import Edit


def unaliased(text: str, schema) -> str:
    """The normalized SQL with every output alias removed (alias-only changes do not count)."""
    tree = sql.normalize(text, schema)
    return sql.render(tree.transform(lambda n: n.this if isinstance(n, sql.ast.Alias) else n))


@pytest.mark.parametrize("case", cases("diff"))
def test_diff_case(case, spider_db):
    edits = sql.diff(case["a"], case["b"], sqlite_schema(spider_db(case["db"])))
    assert [[e.kind, e.clause, e.before, e.after] for e in edits] == case["edits"]
    if "refs" in case:
        assert [e.schema_refs for e in edits] == case["refs"]
    assert all(isinstance(e, Edit) and e.path for e in edits)


def test_diff_is_empty_for_every_dev_gold_against_itself_reformatted(spider_dir, spider_db):
    items = json.loads((spider_dir / "dev.json").read_text())[:150]
    for item in items:
        schema = sqlite_schema(spider_db(item["db_id"]))
        again = sql.render(sql.parse(item["query"]), pretty=True)  # new layout, same query
        assert sql.diff(item["query"], again, schema) == [], item["query"]


def test_real_prediction_edits_touch_what_differs(data_dir, spider_dir, spider_db):
    """Every Spider-dev prediction of DIN-SQL that differs from the gold gives a non-empty diff."""
    items = json.loads((spider_dir / "dev.json").read_text())[:120]
    preds = (data_dir / "predictions" / "spider-dev" / "din-sql_gpt-4.sql").read_text().splitlines()
    nonempty = 0
    for item, pred in zip(items, preds):
        schema = sqlite_schema(spider_db(item["db_id"]))
        try:
            edits = sql.diff(pred, item["query"], schema)
        except SqlmendError:  # a prediction may name unknown columns: that is a finding, not a diff
            continue
        if unaliased(pred, schema) != unaliased(item["query"], schema):
            nonempty += 1
            assert edits, (pred, item["query"])
    assert nonempty > 10


def test_kept_share_counts_the_original_tokens_a_candidate_keeps():
    from sqlmend.sql import kept_share

    failing = "SELECT model FROM cars_data ORDER BY horsepower LIMIT 1"
    joined = "SELECT model FROM cars_data JOIN car_names ON cars_data.Id = car_names.MakeId ORDER BY horsepower LIMIT 1"
    assert kept_share(failing, joined) == 1.0  # only adds
    assert kept_share(failing, "SELECT Id FROM cars_data ORDER BY horsepower LIMIT 1") == 7 / 8
    assert kept_share(failing, "select MODEL from CARS_DATA order by HORSEPOWER limit 1") == 1.0  # case folded
    assert kept_share("SELECT a, a FROM t", "SELECT a FROM t") == 4 / 6  # with multiplicity (the comma too)
