"""The search's adaptation kept in a PostgreSQL memory store: saved, read back, used by the stage."""

from __future__ import annotations

import pytest

from sqlmend.search import adaptation as adapt

from test_adaptation import _history, _search_trace

pytestmark = pytest.mark.postgres


def test_an_adaptation_in_postgres_is_read_back_and_used_by_the_stage(pg_server):
    pg_server.admin("CREATE DATABASE adaptation_store")
    store_url = pg_server.url("adaptation_store", user="postgres")
    assert adapt.load(store_url, "sys") is None
    obs, rights = _history(30, 60)
    a = adapt.fit("sys", obs, rights, 0.4, 90)
    a.threshold = 0.0
    adapt.save(a, store_url, "sys")
    back = adapt.load(store_url, "sys")
    assert back.weights == a.weights and back.label == "sys (history 90)" and adapt.load(store_url, "other") is None
    _, trace = _search_trace({"adaptation": store_url, "adaptation_namespace": "sys"})
    assert trace.detail["adaptation"]["name"] == "sys (history 90)" and trace.candidate is not None
    a.threshold = None  # a refit replaces the row
    adapt.save(a, store_url, "sys")
    assert adapt.load(store_url, "sys").threshold is None
