"""The value index of a big table: its columns read one at a time on first use, kept in a sidecar file
for the next process, bounded by a work limit (a sample then stands for the column, and the trace says
so); the search across columns never depends on which columns were read before.

A small generated shop database (``sqlmend bench scale``'s, 3,000 orders) with ``LAZY_ROWS`` set below
its ``orders`` table stands for a big one; SQLite's trace callback counts what the engine runs.
"""

from __future__ import annotations

import pytest

import sqlmend
from sqlmend.bench.scale import generate_sqlite
from sqlmend.db import connect, scope, values
from sqlmend.db.base import forget
from sqlmend.db.values import ValueIndex, column_file


@pytest.fixture(scope="module")
def shop_file(tmp_path_factory):
    return generate_sqlite(tmp_path_factory.mktemp("shop") / "shop.sqlite", 3000, seed=1)


@pytest.fixture
def shop(shop_file, cache_root, monkeypatch):
    monkeypatch.setattr(values, "LAZY_ROWS", 1000)  # orders (3,000 rows) is big, customer (1,000) is not
    monkeypatch.setattr(scope, "SCOPE_ABOVE", 1000)  # its 503 tables read whole, as a database's index
    forget()
    yield shop_file
    forget()


def _statements(db) -> list[str]:
    seen: list[str] = []
    db._conn.set_trace_callback(seen.append)
    return seen


def test_a_big_column_is_read_on_first_use_and_kept_for_the_next_process(shop):
    with connect(shop) as db:
        vi = db.value_index()
        assert vi.lazy("orders", "status") and not vi.lazy("customer", "country")
        seen = _statements(db)
        assert vi.contains("orders", "status", "shipped") and not vi.is_partial("orders", "status")
        assert sorted(vi.values("orders", "status")) == ["cancelled", "delivered", "pending", "returned", "shipped"]
        assert [s for s in seen if 'DISTINCT "status"' in s]  # read now, once
        assert column_file(db.cache_key(), "orders", "status").exists()
        seen.clear()
        vi.contains("orders", "status", "x")
        assert not seen
    forget()  # a new process: the index file and the column's sidecar, no scan
    with connect(shop) as db:
        seen = _statements(db)
        vi = db.value_index()
        assert vi.from_cache and vi.find("orders", "status", "SHIPPED") == ["shipped"]
        assert not [s for s in seen if "orders" in s and "DISTINCT" in s]  # its schema read, none of its values


def test_the_search_across_columns_does_not_depend_on_what_was_read_before(shop):
    with connect(shop) as db:
        before = [(m.table, m.column, m.value) for m in db.value_index().search("pending", mode="ci")]
        db.value_index().values("orders", "status")  # the whole column read now
        after = [(m.table, m.column, m.value) for m in db.value_index().search("pending", mode="ci")]
    assert before == after and ("orders", "status", "pending") in before  # its sample, read at build


def test_a_column_past_its_read_limit_keeps_a_sample_and_the_trace_says_so(shop, monkeypatch):
    monkeypatch.setattr(values, "COLUMN_LIMIT", 0.0001)  # 2 units of work: no column of orders is read whole
    with connect(shop) as db:
        vi = db.value_index()
        assert vi.is_partial("orders", "note") and "not all read" in vi.bounded("orders", "note")
    with sqlmend.Corrector(shop) as fixer:
        result = fixer.correct("How many orders have the note 'note 5'?",
                               "SELECT count(*) FROM orders WHERE note = 'Note 5'")
    static = next(s for s in result.stages if s.stage == "static")
    assert any("orders.note" in b for b in static.detail["bounded"]), static.detail


def test_a_wrong_literal_on_a_big_column_is_fixed(shop):
    with sqlmend.Corrector(shop) as fixer:
        result = fixer.correct("What is the total amount of the shipped orders?",
                               "SELECT sum(amount) FROM orders WHERE status = 'Shipped'")
        again = fixer.correct("What is the total amount of the shipped orders?",
                              "SELECT sum(amount) FROM orders WHERE status = 'Shipped'")
    assert result.sql == again.sql == "SELECT SUM(amount) FROM orders WHERE status = 'shipped'"
    assert result.correction.executions["executed"] == 2 and again.correction.executions == result.correction.executions


def test_an_index_file_of_the_old_version_is_rebuilt(shop):
    with connect(shop) as db:
        index = db.value_index()
        path = values.cache_file(db.cache_key())
    data = path.read_text().replace(f'"version": {values.INDEX_VERSION}', '"version": 1')
    path.write_text(data)
    with pytest.raises(ValueError):
        ValueIndex.load(path)
    assert index.stats()["lazy_columns"] == 6
