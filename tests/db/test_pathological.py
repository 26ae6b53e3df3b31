"""Pathological queries (issue 35, item 2): each ends its item with a clear reason within the item's
one budget, on SQLite, PostgreSQL and DuckDB, and the next request is served normally.

Counts and reasons are asserted, never wall times (the machine is shared); a small ``timeout``
keeps the suite short.
"""

from __future__ import annotations

import pytest

import sqlmend
from sqlmend.stress.pathological import NORMAL, QUERIES
from sqlmend.db import connect
from sqlmend.db.base import WORK_PER_SECOND, WorkBudget, fetch_capped
from sqlmend.errors import ItemLimitExceeded, MemoryLimitExceeded

TIMEOUT = 2.0  # seconds of work; its wall-clock safety net (10x) must not fire on a loaded machine

#: (engine, query name, what the item's outcome must say)
CASES = [
    ("sqlite", "recursive_cte", "used up its budget"),
    ("sqlite", "cartesian_4", "used up its budget"),
    ("sqlite", "zeroblob_500mb", "memory limit"),
    ("sqlite", "string_doubling", "memory limit"),
    ("sqlite", "randomblob_rows", "memory limit"),
    ("sqlite", "unions_300", "nested"),
    ("postgres", "recursive_cte", "used up its budget"),
    ("postgres", "string_rows", "memory limit"),
    ("postgres", "unions_300", "nested"),
    ("postgres", "joins_200", "at most 64 tables in a join"),
    ("duckdb", "recursive_cte", "used up its budget"),
    ("duckdb", "unions_300", "nested"),
    ("duckdb", "joins_200", "at most 64 tables in a join"),
    ("duckdb", "string_500mb", ("memory limit", "used up its budget")),  # its memory cap, or its time when busy
    ("duckdb", "list_100m", "memory limit"),
    ("sqlite", "joins_200", "at most 64 tables in a join"),
]


@pytest.fixture(scope="module")
def world(request):
    """``world(engine)`` -> a Corrector on world_1 in that engine (one per engine, kept)."""
    made = {}

    def get(engine):
        if engine not in made:
            if engine == "sqlite":
                target = str(request.getfixturevalue("spider_db")("world_1"))
            elif engine == "duckdb":
                target = str(request.getfixturevalue("duckdb_spider")("world_1"))
            else:
                target = request.getfixturevalue("pg_spider")("world_1")
            made[engine] = sqlmend.Corrector(target, db_id="world_1", timeout=TIMEOUT)
        return made[engine]

    yield get
    for fixer in made.values():
        fixer.close()


def _outcome(result) -> str:
    return result.error or " ".join(f"{s.note} {[f.evidence for f in s.findings]}" for s in result.stages)


@pytest.mark.parametrize("engine,name,says", CASES, ids=[f"{e}-{n}" for e, n, _ in CASES])
def test_a_pathological_query_ends_its_item_with_a_clear_reason_and_the_next_is_served(world, engine, name, says):
    fixer = world(engine)
    result = fixer.correct("How many?", QUERIES[engine][name])
    says = (says,) if isinstance(says, str) else says
    if "used up its budget" in says:
        says = (*says, "wall-clock deadline")
    assert any(s in _outcome(result) for s in says), _outcome(result)
    assert result.sql == QUERIES[engine][name]  # the input is kept
    if result.error:  # its counted budget, or the item's wall-clock net on a machine slower than it assumes
        assert result.error.startswith(("ItemLimitExceeded: ", "DeadlineExceeded: timed out: the item ran past"))
    normal = fixer.correct(NORMAL[0], NORMAL[1])
    assert normal.error is None and normal.sql == NORMAL[1]
    assert all(s.status != "failed" for s in normal.stages)


def test_the_items_queries_share_one_budget(spider_db):
    with connect(spider_db("world_1")) as db:
        db.budget = WorkBudget(0.2)
        with pytest.raises(ItemLimitExceeded, match="used up its budget of 5,000 work units"):
            db.execute(QUERIES["sqlite"]["cartesian_4"], timeout=1.0)
        with pytest.raises(ItemLimitExceeded):  # nothing left: the next query does not start
            db.execute("SELECT 1", timeout=1.0)
        assert db.budget.left <= 0
        db.budget = None
        assert db.execute("SELECT 1").rows == [(1,)]


def test_a_query_within_the_budget_is_charged_its_work(spider_db):
    with connect(spider_db("world_1")) as db:
        db.budget = WorkBudget(1.0)
        result = db.execute("SELECT count(*) FROM city")
        assert result.rows == [(4079,)]
        assert db.budget.used == pytest.approx(result.work / WORK_PER_SECOND)


def test_the_result_fetch_stops_past_its_byte_cap():
    rows = [("x" * 1000,)] * 50

    def fetcher(data):
        it = iter(data)
        return lambda n: [r for _, r in zip(range(n), it)]

    assert len(fetch_capped(fetcher(rows), 1, 10)) == 11  # max_rows + 1: a truncated result
    assert len(fetch_capped(fetcher(rows), 1, 100, max_bytes=60_000)) == 50
    with pytest.raises(MemoryLimitExceeded, match="memory limit"):
        fetch_capped(fetcher(rows), 1, 100, max_bytes=20_000)
    with pytest.raises(MemoryLimitExceeded):
        fetch_capped(fetcher(rows), 1, 100, max_bytes=20_000, value_bytes=None)


@pytest.mark.parametrize("stages", ["static,guard", "search,guard", "static,memory,search,refine,guard"])
def test_the_bound_is_the_same_whatever_the_stages(spider_db, stages):
    with sqlmend.Corrector(spider_db("world_1"), stages=stages, timeout=1.0) as fixer:
        result = fixer.correct("How many?", QUERIES["sqlite"]["cartesian_4"])
    assert result.error == ("ItemLimitExceeded: the item's queries used up its budget of 20,000 work units (0.8s of "
                            "work), 0.8 x the timeout; the input is kept")
