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


def test_a_corrector_outlives_the_end_of_its_postgresql_sessions(pg_server, pg_spider, cache_root):
    """The server ends every session on the database (as a restart does): the next call reconnects."""
    with sqlmend.Corrector(pg_spider("concert_singer"), stages="static,guard") as fixer:
        before = fixer.correct_many([(QUESTION, WRONG)] * 3, workers=3)
        pg_server.admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = 'concert_singer' AND pid <> pg_backend_pid()")
        after = fixer.correct_many([(QUESTION, WRONG)] * 3, workers=3)
        assert [r.sql for r in after] == [r.sql for r in before] and all("'France'" in r.sql for r in after)
        assert all(s.status == "ran" for r in after for s in r.stages)
