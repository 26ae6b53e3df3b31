"""A DDL change under a running service (real HTTP on loopback, uvicorn in a thread) is seen by the next
request: the service keeps its connections, schema and value index across requests, and a column renamed
by DDL alone (no row written) must not leave it answering from the old catalogue.

Before the change ``status`` stores 'pending' and ``label`` stores 'Pending': ``status = 'Pending'`` is a
value in another case (VL01 fixes it). After ``status`` is renamed ``state`` and ``label`` renamed
``status``, the same query is right as written; a service reading its old values would "fix" it into a
query with other rows.
"""

from __future__ import annotations

import sqlite3

import httpx
import psycopg
import pytest

from pg_server import READER
from sqlmend.pipeline import PipelineConfig
from sqlmend.service import ServiceSettings, create_app
from sqlmend.service.runner import BackgroundServer

QUERY = "SELECT count(*) FROM orders WHERE status = 'Pending'"
FIXED = "SELECT COUNT(*) FROM orders WHERE status = 'pending'"
TABLE = ("CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT, label TEXT)",
         "INSERT INTO orders VALUES (1, 'pending', 'Pending'), (2, 'pending', 'Shipped'), (3, 'shipped', 'Pending')")
RENAME = ("ALTER TABLE orders RENAME COLUMN status TO state", "ALTER TABLE orders RENAME COLUMN label TO status")


@pytest.fixture
def service(tmp_path, monkeypatch):
    monkeypatch.setenv("SQLMEND_CACHE", str(tmp_path / "cache"))
    app = create_app(PipelineConfig(stages=["static", "guard"]), db_root=str(tmp_path / "root"),
                     settings=ServiceSettings(allow_paths=True))
    with BackgroundServer(app) as server:
        yield server


def _correct(server, **database) -> dict:
    r = httpx.post(server.url + "/correct", json={"question": "How many orders are pending?", "sql": QUERY,
                                                  **database}, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def test_sqlite_a_renamed_column_is_seen_by_the_next_request(service, tmp_path):
    folder = tmp_path / "root" / "shop"
    folder.mkdir(parents=True)
    conn = sqlite3.connect(folder / "shop.sqlite")
    for statement in TABLE:
        conn.execute(statement)
    conn.commit()
    assert _correct(service, db_id="shop")["sql"] == FIXED
    for statement in RENAME:
        conn.execute(statement)
    conn.commit()
    conn.close()
    after = _correct(service, db_id="shop")
    assert after["sql"] == QUERY and not after["changed"]


def test_postgres_a_renamed_column_is_seen_by_the_next_request(service, pg_server):
    pg_server.admin("CREATE DATABASE ddl_shop")
    pg_server.admin(f"GRANT CONNECT ON DATABASE ddl_shop TO {READER}")
    with psycopg.connect(pg_server.url("ddl_shop", user="postgres"), autocommit=True) as admin:
        for statement in TABLE:
            admin.execute(statement)
        admin.execute(f"GRANT SELECT ON orders TO {READER}")
        url = pg_server.url("ddl_shop")
        assert _correct(service, db=url)["sql"] == FIXED
        for statement in RENAME:  # DDL alone: no row inserted, updated or deleted
            admin.execute(statement)
        after = _correct(service, db=url)
    assert after["sql"] == QUERY and not after["changed"]
