"""Every perturbation operator on a real Spider database, with its execution-difference check."""

from __future__ import annotations

import random

import pytest

from sqlmend import taxonomy
from sqlmend.db import connect
from sqlmend.synth import OPERATORS, differs, perturb

# operator -> a gold query of concert_singer it applies to
CASES = {
    "attribute_swap": "SELECT name, country FROM singer WHERE age > 20",
    "attribute_add": "SELECT name FROM singer WHERE age > 20",
    "attribute_drop": "SELECT name, country FROM singer WHERE age > 20",
    "join_key_swap": "SELECT T2.name FROM singer_in_concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.singer_id",
    "table_swap": "SELECT count(*) FROM concert",
    "join_add": "SELECT T1.name FROM singer AS T1 WHERE T1.age > 20",
    "join_drop": ("SELECT T1.concert_name FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id "
                  "WHERE T2.capacity > 5000"),
    "value_variant": "SELECT name FROM singer WHERE country = \"France\"",
    "number_shift": "SELECT name FROM singer WHERE age > 40",
    "condition_drop": "SELECT name FROM singer WHERE country = 'France'",
    "operator_flip": "SELECT name FROM singer WHERE age > 40",
    "connective_flip": "SELECT name FROM singer WHERE age > 30 AND country = 'France'",
    "condition_column_swap": "SELECT name FROM singer WHERE age > 40",
    "aggregate_swap": "SELECT max(age) FROM singer",
    "aggregate_drop": "SELECT max(age) FROM singer",
    "group_by_drop": "SELECT country, count(*) FROM singer GROUP BY country",
    "order_by_swap": "SELECT name FROM singer ORDER BY age DESC LIMIT 1",
    "having_drop": "SELECT country FROM singer GROUP BY country HAVING count(*) > 1",
    "set_operation_swap": ("SELECT country FROM singer WHERE age > 40 UNION "
                           "SELECT country FROM singer WHERE age < 30"),
    "sort_direction_flip": "SELECT name FROM singer ORDER BY age DESC LIMIT 1",
    "limit_change": "SELECT name FROM singer ORDER BY age DESC LIMIT 1",
    "distinct_toggle": "SELECT count(DISTINCT country) FROM singer",
}


def test_every_operator_has_a_case_and_every_type_an_operator():
    assert set(CASES) == set(OPERATORS)
    covered = {op.error_type for op in OPERATORS.values()}
    assert covered == set(taxonomy.ids())


@pytest.fixture(scope="module")
def concert_db(spider_db):
    with connect(spider_db("concert_singer")) as db:
        yield db


@pytest.mark.parametrize("name", sorted(CASES))
def test_operator_changes_the_result(name, concert_db):
    gold = CASES[name]
    op = OPERATORS[name]
    gold_res = concert_db.execute(gold)
    found = None
    for seed in range(8):
        found = next(perturb(gold, concert_db.schema(), concert_db, gold_res, random.Random(seed), [op]), None)
        if found:
            break
    assert found is not None, f"{name} found no execution-changing perturbation of {gold}"
    text, used, res = found
    assert used.error_type == op.error_type and text.strip() != gold.strip()
    assert differs(res, concert_db.execute(text)) is False  # the perturbation executes, deterministically
    assert differs(res, gold_res)


def test_differs_uses_set_semantics(concert_db):
    a = concert_db.execute("SELECT country FROM singer")
    b = concert_db.execute("SELECT DISTINCT country FROM singer")
    assert not differs(a, b)  # only duplicates differ: the labels of execution accuracy say "same"
    assert differs(a, concert_db.execute("SELECT name FROM singer"))


def test_operator_that_does_not_apply_returns_nothing(concert_db):
    tree_sql = "SELECT name FROM singer"
    assert not list(perturb(tree_sql, concert_db.schema(), concert_db, concert_db.execute(tree_sql),
                            random.Random(0), [OPERATORS["having_drop"], OPERATORS["set_operation_swap"]]))
