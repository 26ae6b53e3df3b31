"""``sqlmend bench scale`` on a small database: the seeded data, each query's expected SQL, the
executions each item runs, the report (the suite never generates the big sizes)."""

from __future__ import annotations

import sqlite3

from sqlmend.bench.scale import QUERIES, QueryRow, SizeResult, generate_sqlite, markdown, measure, write_html


def _digest(path) -> list:
    con = sqlite3.connect(path)
    try:
        return [con.execute(f"SELECT count(*), total(length(name)), total(id) FROM {t}").fetchone()
                if t == "customer" else con.execute(f"SELECT count(*), total(amount), group_concat(status, '') "
                                                    f"FROM (SELECT * FROM {t} ORDER BY id LIMIT 50)").fetchone()
                for t in ("customer", "orders")]
    finally:
        con.close()


def test_the_data_is_seeded(tmp_path):
    a = generate_sqlite(tmp_path / "a.sqlite", 2000, seed=3)
    b = generate_sqlite(tmp_path / "b.sqlite", 2000, seed=3)
    c = generate_sqlite(tmp_path / "c.sqlite", 2000, seed=4)
    assert _digest(a) == _digest(b) != _digest(c)


def test_each_query_gets_its_expected_sql_once_per_distinct_query(tmp_path, monkeypatch):
    path = generate_sqlite(tmp_path / "shop.sqlite", 3000, seed=0)
    cache = tmp_path / "cache"
    monkeypatch.setenv("SQLMEND_CACHE", str(cache))  # measure() sets it for its process: restored after
    out = measure(str(path), str(cache))
    rows = [QueryRow(**r) for r in out["rows"]]
    assert [r.query for r in rows] == [q.name for q in QUERIES]
    assert all(r.ok for r in rows), [(r.query, r.error) for r in rows]
    fixed = {r.query: r for r in rows}
    assert fixed["sum_shipped_wrong"].executed == 3 and fixed["sum_shipped_wrong"].reused >= 3  # input, fix, probe
    assert fixed["max_amount_right"].executed == 1
    result = SizeResult("sqlite", 3000, 1.0, 0.1, out["first_seconds"], out["first_seconds"], True, out["peak_mb"],
                        rows, rows)
    assert "| sqlite | 3,000 | sum_shipped_wrong |" in markdown([result])
    assert "<svg" in write_html(tmp_path / "scale.html", [result]).read_text()
