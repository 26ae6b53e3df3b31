"""DuckDB: a Spider database copied into a DuckDB file, read through the same interface."""

from __future__ import annotations

import time

import pytest

from sqlmend.db import connect
from sqlmend.errors import MemoryLimitExceeded, QueryError, QueryTimeout, ReadOnlyViolation


@pytest.fixture
def db(duckdb_spider, cache_root):
    with connect(f"duckdb://{duckdb_spider('concert_singer')}") as d:
        yield d


def test_results_match_sqlite(db, spider_db):
    sql = "SELECT country, COUNT(*) AS n FROM singer GROUP BY country ORDER BY country"
    with connect(spider_db("concert_singer")) as lite:
        assert db.execute(sql).rows == lite.execute(sql).rows
    r = db.execute("SELECT * FROM singer ORDER BY singer_id", max_rows=2)
    assert r.truncated and [row[0] for row in r.rows] == [1, 2]
    with pytest.raises(QueryError):
        db.execute("SELECT nope FROM singer")


def test_schema_values_profile(db):
    schema = db.schema()
    assert db.dialect == schema.dialect == "duckdb"
    assert schema.table("singer").primary_key == ["singer_id"]
    assert schema.table("stadium").row_count == 9
    vi = db.value_index()
    assert vi.find("singer", "country", "netherlands", mode="ci") == ["Netherlands"]
    assert db.value_index() is vi  # built once per connection
    assert db.profile("stadium", "capacity").max == 52500


@pytest.mark.parametrize("sql", [
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c",
    "SELECT COUNT(*) FROM range(1000000) a, range(1000000) b",
], ids=["recursive_cte", "cross_join"])
def test_runaway_query_stops_within_limit(db, sql):
    limit = 1.0
    start = time.monotonic()
    with pytest.raises(QueryTimeout):
        db.execute(sql, timeout=limit)
    assert time.monotonic() - start < limit + 5  # interrupted, not run to its end (a bound, not a speed test)
    assert db.execute("SELECT COUNT(*) FROM singer").rows == [(6,)]


def test_the_search_on_duckdb_counts_its_executions_in_seconds(db):
    """DuckDB counts no VM instructions (``last_work`` is None): the search's budget adds the seconds its
    candidates took instead, and still stops it."""
    from sqlmend.search import SearchInput, SearchSettings, execute_original, search
    from sqlmend.search.engine import COST

    assert db.execute("SELECT 1").work is None and db.last_work() is None
    orig = execute_original(db, "SELECT name FROM singer WHERE age > 30 ORDER BY age", 5, 2000)
    inp = SearchInput("Names of singers older than 30?", db.schema(), db.value_index())
    # unbounded, this search runs ~160 candidates for ~1.1 s of cost; how many run before 0.3 s
    # depends on the machine's load here (docs/pipeline.md, "Same input, same output")
    found = search(db, orig, inp, settings=SearchSettings(budget=0.3, max_seconds=60))
    # past the budget, then rounded to 4 places in the result (0.30003 reads 0.3)
    assert found.executed > 0 and found.work == 0 and found.cost >= 0.3 and found.stopped == "budget"
    assert found.cost > found.generated * COST["generated"]  # the executions' seconds were added


def test_a_second_connection_to_the_same_file_opens_and_stays_locked(db, duckdb_spider):
    """Each connection's worker opens the file read-only with its settings locked: no query turns
    external access back on."""
    with connect(f"duckdb://{duckdb_spider('concert_singer')}") as second:
        assert second.execute("SELECT COUNT(*) FROM singer").rows == db.execute("SELECT COUNT(*) FROM singer").rows
        # sqlmend's own query (a query may not read settings: current_setting is off the read-only list)
        assert second._query("SELECT current_setting('lock_configuration'), "
                             "current_setting('enable_external_access')") == [(True, False)]
        with pytest.raises(ReadOnlyViolation, match="current_setting"):
            second.execute("SELECT current_setting('enable_external_access')")
        with pytest.raises(ReadOnlyViolation):
            second.execute("SELECT * FROM read_csv('/etc/passwd')")


@pytest.mark.parametrize("sql", [
    "SELECT repeat('x', 500000000)",
    "SELECT len(range(100000000))",
    "WITH RECURSIVE s(x, n) AS (SELECT 'x', 0 UNION ALL SELECT x || x, n + 1 FROM s WHERE n < 40) "
    "SELECT max(length(x)) FROM s",
], ids=["repeat", "list", "doubling"])
def test_allocations_outside_duckdbs_memory_limit_stop_in_its_worker(db, sql):
    """DuckDB allocates these outside its memory_limit (a 500 MB string took the caller past 2 GB, the list
    past 6 GB): in the worker, whose address space is capped, they stop with a memory error, the caller's
    memory does not grow, and a fresh worker answers the next query."""
    from sqlmend.stress.pathological import memory_mb
    from sqlmend.db.duckdb import WORKER_MEMORY

    before = memory_mb()[1]
    with pytest.raises(MemoryLimitExceeded):
        db.execute(sql, timeout=20)
    assert memory_mb()[1] - before < 100
    assert db.execute("SELECT COUNT(*) FROM singer").rows == [(6,)]
    assert 0 < db.peak_memory() < WORKER_MEMORY


def test_a_killed_worker_is_replaced(db):
    db._worker.kill()
    db._worker.wait()
    with pytest.raises(MemoryLimitExceeded, match="worker process ended"):
        db.execute("SELECT COUNT(*) FROM singer")
    assert db.execute("SELECT COUNT(*) FROM singer").rows == [(6,)]
