"""The call log and cache in a real PostgreSQL server: the SQLite file's rows, one cache for replicas."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from sqlmend.db import pgmigrate
from sqlmend.llm import CallLog, ReplayBackend, tagged
from sqlmend.llm.calllog import PgCallLog
from sqlmend.llm.config import LLMConfig
from sqlmend.memory.pgstore import PgMemoryStore

pytestmark = pytest.mark.postgres
_names = itertools.count()
MSG = [{"role": "user", "content": "Which table holds singers?"}]
SCHEMA = {"type": "object", "properties": {"table": {"type": "string"}}, "required": ["table"]}


@pytest.fixture
def log_url(pg_server):
    """A fresh, empty PostgreSQL database for one test (no call-log tables yet)."""
    name = f"calllog_{next(_names)}"
    pg_server.admin(f"CREATE DATABASE {name}")
    return pg_server.url(name, user="postgres")


def _session(log: CallLog) -> None:
    """The same calls against any log: a cached chat, a structured call with its retry, a failure."""
    backend = ReplayBackend.scripted(["users", "the singer table", '{"table": "singer"}'], log=log)
    with tagged("q1"):
        backend.chat(MSG, stage="refiner")
        backend.chat(MSG, stage="refiner")  # answered from the cache
        backend.chat(MSG + [{"role": "user", "content": "JSON"}], schema=SCHEMA, stage="judge")
    with tagged("q2"), pytest.raises(Exception, match="no scripted answer"):
        backend.chat([{"role": "user", "content": "one more"}], stage="judge")


def _comparable(rows):
    return [{k: v for k, v in r.items() if k not in ("id", "ts", "latency")} for r in rows]


def test_rows_and_summary_are_those_of_the_sqlite_file(log_url, tmp_path):
    pg, lite = CallLog(log_url), CallLog(tmp_path / "llm.sqlite")
    assert isinstance(pg, PgCallLog) and not isinstance(lite, PgCallLog)
    for log in (pg, lite):
        _session(log)
    assert list(pg.calls()[0]) == list(lite.calls()[0])  # same columns, same order
    assert _comparable(pg.calls()) == _comparable(lite.calls())
    assert [r["cache_hit"] for r in pg.calls(tag="q1")] == [0, 1, 0, 0]
    assert [(r["schema_valid"], r["attempt"]) for r in pg.calls(tag="q1")][2:] == [(0, 1), (1, 2)]
    assert "no scripted answer" in pg.calls(tag="q2")[0]["error"]
    for tag in (None, "q1", "q2"):
        a, b = pg.summary(tag=tag), lite.summary(tag=tag)
        assert [{**r, "latency": 0} for r in a] == [{**r, "latency": 0} for r in b]
        assert [r["latency"] for r in a] == pytest.approx([r["latency"] for r in b], abs=1.0)
    (judge,) = [r for r in pg.summary(since=0.0) if r["stage"] == "judge"]
    assert (judge["calls"], judge["errors"], judge["structured"], judge["valid"], judge["retries"]) == (3, 1, 2, 1, 1)
    assert pg.summary(tag="none") == [] and pg.calls(since=9e18) == []
    cached = lite.clear_cache()
    assert cached > 0 and pg.clear_cache() == cached and pg.clear_cache() == 0
    pg.close()
    lite.close()


def test_a_call_cached_by_one_replica_is_a_hit_for_another(log_url, monkeypatch):
    first = CallLog(log_url)
    a = ReplayBackend.scripted(["users"], log=first)
    assert not a.chat(MSG, stage="refiner").cached
    # a second replica: its own process-level log, found through the environment / the config
    monkeypatch.setenv("SQLMEND_LLM_LOG", log_url)
    second = CallLog()
    third = LLMConfig(log=log_url).call_log()
    assert isinstance(second, PgCallLog) and isinstance(third, PgCallLog)
    for log in (second, third):
        b = ReplayBackend.scripted(["never asked"], log=log)
        res = b.chat(MSG, stage="refiner")
        assert res.cached and res.text == "users" and b.history == []
    rows = second.calls()
    assert [r["cache_hit"] for r in rows] == [0, 1, 1]
    assert len({r["prompt_hash"] for r in rows}) == 1  # the same key on every replica
    off = CallLog(log_url, cache=False)
    c = ReplayBackend.scripted(["fresh"], log=off)
    assert c.chat(MSG).text == "fresh" and len(off.calls()) == 4  # cache off: still logged
    for log in (first, second, third, off):
        log.close()


def test_concurrent_writers_lose_nothing(log_url):
    shared = CallLog(log_url)
    per_thread, threads = 40, 8

    def write(k: int) -> None:
        own = CallLog(log_url) if k % 2 else shared  # half share a connection, half have their own
        backend = ReplayBackend.scripted([f"a{k}-{i}" for i in range(per_thread)] + ["same"], log=own)
        with tagged(f"t{k}"):
            for i in range(per_thread):
                backend.chat([{"role": "user", "content": f"question {k}/{i}"}], stage="refiner")
            own.cache_put("same-key", "chat", {"text": "same", "k": k})  # every thread writes one key
        if own is not shared:
            own.close()

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(write, range(threads)))
    rows = shared.calls()
    assert len(rows) == threads * per_thread and len({r["id"] for r in rows}) == len(rows)
    for k in range(threads):
        assert len(shared.calls(tag=f"t{k}")) == per_thread
    with psycopg.connect(log_url) as conn:
        assert conn.execute("SELECT count(*) FROM sqlmend_llm_cache").fetchone()[0] == threads * per_thread + 1
    assert shared.cache_get("same-key")["text"] == "same"
    assert shared.summary()[0]["calls"] == threads * per_thread
    shared.close()


def test_migrations_apply_once_beside_the_memory_store(log_url):
    versions = [v for v, _, _ in pgmigrate.migrations("sqlmend.llm")]
    assert versions == sorted(set(versions)) and versions[0] == 1

    def start(_):
        with psycopg.connect(log_url, autocommit=True) as conn:
            return pgmigrate.migrate(conn, "sqlmend.llm", "sqlmend_llm_migrations")

    with ThreadPoolExecutor(6) as pool:
        applied = list(pool.map(start, range(6)))
    assert sorted(map(tuple, applied)) == [()] * 5 + [tuple(versions)]
    log = CallLog(log_url)
    assert log.version == versions[-1]
    with PgMemoryStore(log_url, "concert_singer") as store:  # one database for both: no clash
        assert len(store) == 0
    with psycopg.connect(log_url) as conn:
        tables = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    assert {"sqlmend_llm_calls", "sqlmend_llm_cache", "sqlmend_llm_migrations",
            "sqlmend_migrations", "sqlmend_memory_items"} <= tables
    log.close()
