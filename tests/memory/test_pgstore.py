"""The repair memory in a real PostgreSQL server: migrations, round trips, concurrent writers."""

from __future__ import annotations

import itertools
import threading
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from sqlmend.errors import ConfigError
from sqlmend.memory.pgstore import PgMemoryStore, migrate, migrations, schema_version
from sqlmend.memory.stage import MemoryStage
from sqlmend.memory.store import open_store
from sqlmend.pipeline import PipelineConfig
from sqlmend.stage import RunSettings

pytestmark = pytest.mark.postgres
_names = itertools.count()


@pytest.fixture
def store_url(pg_server):
    """A fresh, empty PostgreSQL database for one test (its memory schema not yet created)."""
    name = f"memory_{next(_names)}"
    pg_server.admin(f"CREATE DATABASE {name}")
    return pg_server.url(name, user="postgres")


def _items(make_item, n, db_id="concert_singer", vector=True):
    out = []
    for i in range(n):
        item = make_item(db_id, "value_literal", {"table": "singer", "column": "Country", "value": f"v{i}"},
                         ["where:singer.country"], ["singer.Country"], qid=f"h{i}")
        item.vector = [i / 10, 1.0, -0.5] if vector else None
        out.append(item)
    return out


def test_migrations_run_once_even_when_replicas_start_together(store_url):
    versions = [v for v, _, _ in migrations()]
    assert versions == sorted(set(versions)) and versions[0] == 1

    def start(_):
        with psycopg.connect(store_url, autocommit=True) as conn:
            return migrate(conn)

    with ThreadPoolExecutor(6) as pool:
        applied = list(pool.map(start, range(6)))
    assert sorted(map(tuple, applied)) == [()] * 5 + [tuple(versions)]
    with psycopg.connect(store_url, autocommit=True) as conn:
        assert schema_version(conn) == versions[-1]
        assert migrate(conn) == []


def test_items_round_trip_with_embeddings_per_database_and_namespace(store_url, make_item):
    a, b = _items(make_item, 2)
    other = _items(make_item, 1, db_id="pets_1")[0]
    with open_store(store_url, "concert_singer") as store:
        assert isinstance(store, PgMemoryStore)
        store.add(a)
        store.add(b)
        store.add(a)  # the same repair again: one row
        store.reject("h9", "judge", "not supported")
        store.reject("h9", "judge", "not supported")
    with open_store(store_url, "pets_1") as store:
        store.add(other)
    with open_store(store_url, "concert_singer", create=False) as store:
        got = store.items()
        assert [i.id for i in got] == [a.id, b.id]
        assert got[0].to_dict() == a.to_dict()  # the embedding comes back as stored
        assert got[0].vector == pytest.approx([0.0, 1.0, -0.5])
        assert store.rejections() == [("h9", "judge", "not supported")]
    with open_store(store_url, "concert_singer") as store:
        before = store.revision()
        store.forget(b.support.question_id)
        assert [i.id for i in store.items()] == [a.id] and store.revision() != before
        store.add(b)
    with pytest.raises(ConfigError, match="no repair memory"):
        open_store(store_url, "concert_singer", create=False, namespace="other")
    with pytest.raises(ConfigError, match="invalid database id"):
        open_store(store_url, "../concert_singer")


def test_concurrent_writers_lose_and_duplicate_nothing(store_url, make_item):
    items = _items(make_item, 100)
    # four writers, each with its own connection; every item is written by two of them
    plan = [items[k::4] + items[(k + 1) % 4::4] for k in range(4)]
    seen: list[int] = []
    done = threading.Event()

    def write(batch):
        with PgMemoryStore(store_url, "concert_singer") as store:
            for item in batch:
                store.add(item)

    def read():
        with PgMemoryStore(store_url, "concert_singer") as store:
            while not done.is_set():
                seen.append(len(store.items()))

    reader = threading.Thread(target=read)
    reader.start()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(write, plan))
    done.set()
    reader.join()
    with PgMemoryStore(store_url, "concert_singer") as store:
        stored = store.items()
    assert sorted(i.id for i in stored) == sorted(i.id for i in items)
    assert len({i.id for i in stored}) == 100
    assert seen == sorted(seen)  # a reader never sees rows vanish while others write


def test_memory_stage_sees_items_added_by_another_writer(store_url, make_item):
    stage = MemoryStage.from_config({"store": store_url}, RunSettings())
    assert stage.folder == store_url
    assert stage.items("concert_singer") == []
    first, second = _items(make_item, 2)
    with PgMemoryStore(store_url, "concert_singer") as store:
        store.add(first)
    assert [i.id for i in stage.items("concert_singer")] == [first.id]
    with PgMemoryStore(store_url, "concert_singer") as store:
        store.add(second)
        assert [i.id for i in stage.items("concert_singer")] == [first.id, second.id]
        store.clear()
    assert stage.items("concert_singer") == []


def test_a_correction_added_from_the_cli_is_used_by_the_service(store_url, spider_db):
    """`sqlmend memory add --store postgresql://...` and a replica serving with that store."""
    import json

    import httpx
    from typer.testing import CliRunner

    from sqlmend.cli import app
    from sqlmend.service import ServiceSettings, create_app
    from sqlmend.service.runner import BackgroundServer

    wrong = ("SELECT singer.name ,  singer.song_release_year FROM singer JOIN singer_in_concert "
             "ON singer.singer_id  =  singer_in_concert.singer_id ORDER BY singer.age LIMIT 1")
    gold = "SELECT song_name ,  song_release_year FROM singer ORDER BY age LIMIT 1"
    runner = CliRunner()
    res = runner.invoke(app, ["memory", "add", "--db", str(spider_db("concert_singer")), "--question",
                              "Show the name and the release year of the song by the youngest singer.",
                              "--wrong", wrong, "--corrected", gold, "--question-id", "6", "--store", store_url,
                              "--namespace", "prod"])
    assert res.exit_code == 0, res.output
    assert "1 corrections -> 1 items" in res.output
    shown = runner.invoke(app, ["memory", "show", "concert_singer", "--store", store_url, "--namespace", "prod",
                                "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)[0]["support"]["question_id"] == "6"
    config = PipelineConfig(stages=["memory", "guard"],
                            options={"memory": {"store": store_url, "namespace": "prod"}})
    with BackgroundServer(create_app(config, settings=ServiceSettings())) as server:
        assert httpx.get(server.url + "/health").json()["memory_store"] == "postgresql"
        body = httpx.post(server.url + "/correct", json={
            "db_id": "concert_singer", "question": "What are the song names of singers older than 40?",
            "sql": "SELECT name FROM singer WHERE age > 40"}).json()
    assert body["sql"] == "SELECT song_name FROM singer WHERE age > 40"
    assert "postgres" not in json.dumps(body)  # the store's URL never reaches a client
    # the command line takes the same URL: `sqlmend correct --memory-store postgresql://...`
    corrected = runner.invoke(app, ["correct", "--db", str(spider_db("concert_singer")), "--stages", "memory,guard",
                                    "--question", "What are the song names of singers older than 40?",
                                    "--sql", "SELECT name FROM singer WHERE age > 40",
                                    "--memory-store", store_url, "--memory-namespace", "prod"])
    assert corrected.exit_code == 0, corrected.output
    assert "SELECT song_name FROM singer WHERE age > 40" in corrected.output
