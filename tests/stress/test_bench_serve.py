"""The service load test, small: replicas as separate processes on one real PostgreSQL memory."""

from __future__ import annotations

import pytest

from sqlmend.stress.serve import load_bodies, run_load
from sqlmend.memory.pgstore import PgMemoryStore

pytestmark = pytest.mark.postgres


def test_two_replicas_share_one_store_while_items_are_written(pg_server, data_dir):
    pg_server.admin("CREATE DATABASE bench_serve")
    url = pg_server.url("bench_serve", user="postgres")
    bodies = load_bodies(next(iter(sorted((data_dir / "predictions" / "spider-dev").glob("*.sql")))), limit=60)
    report = run_load(bodies, requests=120, concurrency=8, replicas=2, stages="static,memory,guard",
                      memory_store=url, memory_items=12, max_seconds=60, warmup=2)
    assert report.requests == 120 and report.errors == 0, report.error_samples
    assert report.ok + report.saturated == 120 and report.req_per_s > 0
    assert (report.items_stored, report.items_lost, report.items_duplicated) == (12, 0, 0)
    assert report.p50_ms <= report.p95_ms <= report.p99_ms


def test_the_items_are_the_replicas_memory(pg_server, data_dir):
    """Items written during a run are read back per database from the namespace the replicas used."""
    pg_server.admin("CREATE DATABASE bench_serve_2")
    url = pg_server.url("bench_serve_2", user="postgres")
    bodies = load_bodies(next(iter(sorted((data_dir / "predictions" / "spider-dev").glob("*.sql")))), limit=30)
    run_load(bodies, requests=30, concurrency=4, replicas=1, stages="static,memory,guard", memory_store=url,
             memory_items=4, max_seconds=60, warmup=1)
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT DISTINCT namespace, db_id FROM sqlmend_memory_items").fetchall()
    assert rows and all(ns.startswith("bench-") for ns, _ in rows)
    ns, db_id = rows[0]
    with PgMemoryStore(url, db_id, namespace=ns) as store:
        assert all(item.vector for item in store.items())
