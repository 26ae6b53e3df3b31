"""``sqlmend.Corrector`` on the other engines: a Spider database copied into DuckDB and PostgreSQL."""

from __future__ import annotations

import pytest

import sqlmend

QUESTION = "How many singers are from France?"
WRONG = "SELECT count(*) FROM singer WHERE country = 'france'"


@pytest.mark.parametrize("engine", ["duckdb", "postgresql"])
def test_a_corrector_on_a_url_fixes_the_wrong_literal(engine, duckdb_spider, request, cache_root):
    target = (f"duckdb:///{duckdb_spider('concert_singer')}" if engine == "duckdb"
              else request.getfixturevalue("pg_spider")("concert_singer"))
    with sqlmend.Corrector(target, stages="static,guard") as fixer:
        assert fixer.db_id == "concert_singer" and fixer.dialect == engine.replace("postgresql", "postgres")
        result = fixer.correct(QUESTION, WRONG)
        assert result.changed and "'France'" in result.sql and result.error is None
        assert [f.code for f in result.findings] == ["VL01"]
        many = fixer.correct_many([(QUESTION, WRONG)] * 4, workers=4)
        assert [r.sql for r in many] == [result.sql] * 4
