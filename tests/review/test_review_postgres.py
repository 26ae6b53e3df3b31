"""The review page writing its confirmations to a PostgreSQL repair memory (the store replicas share)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from sqlmend.memory.pgstore import PgMemoryStore
from sqlmend.memory.stage import MemoryStage
from sqlmend.review.app import create_app
from sqlmend.review.run import Run
from sqlmend.stage import RunSettings

pytestmark = pytest.mark.postgres


def test_review_builds_into_postgres_and_a_replica_reads_it(car_run, pg_server):
    pg_server.admin("CREATE DATABASE review_memory")
    url = pg_server.url("review_memory", user="postgres")
    replica = MemoryStage.from_config({"store": url, "namespace": "prod"}, RunSettings())
    assert replica.items("car_1") == []
    app = create_app(Run.load(car_run), "ana", url, namespace="prod")
    c, token = TestClient(app), app.state.csrf
    c.post("/item/112/decide", data={"csrf": token, "action": "edit", "sql":
           "SELECT Accelerate FROM car_names JOIN cars_data ON car_names.MakeId = cars_data.Id "
           "WHERE Make = 'amc hornet sportabout (sw)'"})
    assert "predicate_column" in c.post("/memory/build", data={"csrf": token}).text
    with PgMemoryStore(url, "car_1", namespace="prod") as store:
        assert [(i.kind, i.support.question_id) for i in store.items()] == [("predicate_column", "112")]
    assert [i.support.question_id for i in replica.items("car_1")] == ["112"]  # seen without a restart
    c.post("/item/112/decide", data={"csrf": token, "action": "reject"})  # withdrawn on the next build
    c.post("/memory/build", data={"csrf": token})
    assert replica.items("car_1") == []
