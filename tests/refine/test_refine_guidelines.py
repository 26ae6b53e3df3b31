"""Guideline templates: one per error type, complete, with examples that run on real data."""

from __future__ import annotations

import pytest

from sqlmend import guard, sql, taxonomy
from sqlmend.db import connect
from sqlmend.refine import guidelines
from sqlmend.refine.extract import CLAUSES


@pytest.mark.parametrize("type_id", taxonomy.ids())
def test_every_type_has_a_complete_template(type_id):
    g = guidelines.load(type_id)
    assert g.fields and g.examples and set(g.clauses) <= set(CLAUSES)
    for name in g.fields:  # every field appears in the guideline text
        assert "{" + name + "}" in g.guideline
    filled = guidelines.fill(g, {k: f"V_{k}" for k in g.fields})
    assert "?>" not in filled and all(f"V_{k}" in filled for k in g.fields)


@pytest.mark.parametrize("type_id", taxonomy.ids())
def test_examples_are_real_fixes(type_id, spider_db):
    """The wrong SQL of each few-shot example runs, and its fix changes the result."""
    for ex in guidelines.load(type_id).examples:
        assert set(ex["fields"]) <= set(guidelines.load(type_id).fields)
        sql.parse(ex["sql"])
        with connect(spider_db(ex["db_id"])) as db:
            verdict = guard.validate(db, ex["sql"], ex["fixed"])
        assert verdict.accepted, (type_id, verdict.reason)


def test_unfilled_fields_are_marked():
    text = guidelines.fill(guidelines.load("value_error"), {"literal": "'x'"})
    assert "'x'" in text and "<column?>" in text and "<stored?>" in text


def test_priority_order_is_configurable():
    found = ["modifier_error", "condition_error", "attribute_mismatch", "table_missing"]
    assert guidelines.order(found) == ["table_missing", "attribute_mismatch", "condition_error",
                                       "modifier_error"]
    custom = ["modifier", "condition"]
    assert guidelines.order(found, custom)[:2] == ["modifier_error", "condition_error"]


def test_unknown_type_is_a_config_error():
    from sqlmend.errors import ConfigError

    with pytest.raises(ConfigError):
        guidelines.load("not_a_type")
