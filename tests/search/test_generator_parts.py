"""Parts of the repair generators that read the question."""

from __future__ import annotations

import pytest

from sqlmend.search.generators.condition_add import number_comparisons
from sqlmend.sql import ast


@pytest.mark.parametrize(("question", "expected"), [
    ("Find the cities that have more than one employee under age 30.", [("30", ast.LT)]),
    ("Which singers are older than 40?", [("40", ast.GT)]),
    ("Show the stadiums with capacity at least 5000.", [("5000", ast.GTE)]),
    ("Which students are 20 or older?", [("20", ast.GTE)]),
    ("Find dogs that weigh no more than 7.5 kilos.", [("7.5", ast.LTE)]),
    ("List the flights after 1980 and before 1990.", [("1980", ast.GT), ("1990", ast.LT)]),
    ("What is the name of the student with id 1?", [("1", ast.EQ)]),
    ("Orders from 2009-2010 in room A12", [("2009", ast.EQ), ("2010", ast.EQ)]),
    # Spider-train phrasings: "or equal to" after the comparative, a currency sign, thousands separators
    ("Compute the number of products with a price larger than or equal to $180.", [("180", ast.GTE)]),
    ("List all the names of schools with an endowment amount smaller than or equal to 10.", [("10", ast.LTE)]),
    ("Find the names of all modern rooms with a base price below $160 and two beds.", [("160", ast.LT)]),
    ("Colleges in LA that have more than 15,000 students.", [("15000", ast.GT)]),
    ("Who checked in on Oct 23, 2010?", [("23", ast.EQ), ("2010", ast.EQ)]),
])
def test_the_words_before_or_after_a_number_give_its_comparison(question, expected):
    assert number_comparisons(question) == expected


def test_a_numeric_condition_needs_no_value_index(spider_conn):
    """Stored values are looked up in the value index; a number the question compares is not."""
    from sqlmend import sql
    from sqlmend.search import generators

    db = spider_conn("employee_hire_evaluation")
    q, text = "Find the cities that have more than one employee under age 30.", "SELECT city FROM employee"
    made = [sql.render(t) for t, _ in generators.get("condition_add")(sql.parse(text),
                                                                      generators.SearchInput(q, db.schema(), None))]
    assert "SELECT city FROM employee WHERE Age < 30" in made
