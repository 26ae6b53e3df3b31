"""The coarse error kind of a wrong prediction, from its diff against the gold (real Spider schema)."""

from __future__ import annotations

from sqlmend.bench.errorkind import error_kind


def test_one_clause_family_is_judgeable_several_are_not(spider_conn):
    schema = spider_conn("concert_singer").schema()
    gold = "SELECT name FROM singer WHERE age > 30"
    assert error_kind("SELECT name, age FROM singer WHERE age > 30", gold, schema) == "attribute"
    assert error_kind("SELECT name FROM singer WHERE age > 40", gold, schema) == "condition"
    assert error_kind("SELECT name FROM singer", gold, schema) == "condition"
    assert error_kind("SELECT DISTINCT name FROM singer WHERE age > 30 ORDER BY age", gold, schema) == "clause"
    assert error_kind("SELECT name FROM concert WHERE age > 30", gold, schema) is None  # unknown column
    assert error_kind("SELECT age FROM singer WHERE age > 40", gold, schema) is None  # two families
    assert error_kind("SELEC name", gold, schema) is None
