"""The SQLite engine on real Spider files: results, caps, time limits, schema, errors, naming."""

from __future__ import annotations

import pytest

from sqlmend.db import benchmark_db, connect
from sqlmend.db.base import WORK_PER_SECOND
from sqlmend.db.duckdb import DuckDBDatabase
from sqlmend.db.sqlite import SqliteDatabase
from sqlmend.errors import DatabaseNotFoundError, QueryError, QueryTimeout, ReadOnlyViolation, WorkLimitExceeded

RECURSIVE = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c"
CROSS = ("SELECT COUNT(*) FROM singer a, singer b, singer c, singer d, singer e, singer f, singer g, "
         "singer h, singer i, singer j, singer k, singer l")


@pytest.fixture
def db(spider_db):
    with connect(spider_db("concert_singer")) as d:
        yield d


def test_execute_returns_columns_rows_and_time(db):
    r = db.execute("SELECT name, age FROM singer WHERE age > 40 ORDER BY age")
    assert r.columns == ["Name", "Age"]
    assert r.rows == [("Rose White", 41), ("John Nizinik", 43), ("Joe Sharp", 52)]
    assert not r.truncated and r.elapsed > 0


def test_max_rows_sets_truncated(db):
    r = db.execute("SELECT * FROM singer", max_rows=4)
    assert len(r.rows) == 4 and r.truncated
    r = db.execute("SELECT * FROM singer", max_rows=6)
    assert len(r.rows) == 6 and not r.truncated


def test_spider_double_quoted_string_literal_works(db):
    r = db.execute('SELECT COUNT(*) FROM singer WHERE country = "France"')
    assert r.rows == [(4,)]


@pytest.mark.parametrize("sql", [RECURSIVE, CROSS], ids=["recursive_cte", "cross_join"])
def test_runaway_query_stops_at_its_work_limit_and_connection_survives(db, sql):
    """The limit is counted in VM instructions: the query stops at the same tick however busy the
    machine is (no timed assertion), and the connection stays usable."""
    limit = 0.2
    with pytest.raises(WorkLimitExceeded) as info:
        db.execute(sql, timeout=limit)
    assert info.value.timeout == limit and info.value.work == int(limit * WORK_PER_SECOND)
    assert isinstance(info.value, QueryTimeout) and "work limit" in str(info.value)
    assert db.execute("SELECT COUNT(*) FROM singer").rows == [(6,)]


def test_engine_errors_are_query_errors(db):
    with pytest.raises(QueryError) as info:
        db.execute("SELECT nope FROM singer")
    assert "no such column" in info.value.engine_message
    with pytest.raises(QueryError):
        db.execute("SELECT * FROM singer WHERE")  # sqlglot cannot parse it: the engine says why


def test_non_queries_are_refused_before_the_engine(db):
    for sql in ["", "   ", "DELETE FROM singer", "SELECT 1; SELECT 2"]:
        with pytest.raises(ReadOnlyViolation):
            db.execute(sql)


def test_schema_tables_columns_keys_and_counts(db):
    schema = db.schema()
    assert [t.name for t in schema.tables] == ["stadium", "singer", "concert", "singer_in_concert"]
    sic = schema.table("SINGER_IN_CONCERT")
    assert sic.primary_key == ["concert_ID", "Singer_ID"]
    assert {(fk.columns[0], fk.ref_table, fk.ref_columns[0]) for fk in sic.foreign_keys} == {
        ("Singer_ID", "singer", "Singer_ID"), ("concert_ID", "concert", "concert_ID")}
    singer = schema.table("singer")
    assert singer.row_count == 6
    assert singer.column("age").type == "INT" and singer.column("singer_id").primary_key
    assert schema.dialect == "sqlite"


def test_foreign_key_without_columns_points_at_primary_key(spider_db):
    # flight_2: "FOREIGN KEY (SourceAirport) REFERENCES airports(AirportCode)" and friends;
    # every foreign key must name as many referenced columns as it has columns.
    for db_id in ("flight_2", "car_1", "world_1", "dog_kennels"):
        with connect(spider_db(db_id)) as d:
            for fk in d.schema().foreign_keys:
                assert len(fk.columns) == len(fk.ref_columns), (db_id, fk)


def test_profile(db):
    p = db.profile("SINGER", "country")
    assert (p.table, p.column, p.rows, p.distinct) == ("singer", "Country", 6, 3)
    assert p.null_fraction == 0.0 and p.min == "France" and p.max == "United States"
    assert p.samples[0] == "France"  # the most frequent value first
    with pytest.raises(Exception, match="no column"):
        db.profile("singer", "nope")


def test_connect_names_and_missing_databases(spider_dir, spider_db, tmp_path):
    path = benchmark_db(spider_dir / "database", "pets_1")
    assert path == spider_db("pets_1")
    with pytest.raises(DatabaseNotFoundError):
        benchmark_db(spider_dir / "database", "wta_1")  # the one dev database Spider's release lacks
    with pytest.raises(DatabaseNotFoundError):
        connect(tmp_path / "missing.sqlite")
    with connect(f"sqlite://{path}") as d:
        assert isinstance(d, SqliteDatabase) and d.dialect == "sqlite"
    not_a_db = tmp_path / "text.sqlite"
    not_a_db.write_text("hello, I am not a database")
    with pytest.raises(Exception, match="cannot open"):
        connect(not_a_db)
    with pytest.raises(DatabaseNotFoundError):
        connect(f"duckdb://{tmp_path / 'missing.duckdb'}")
    assert DuckDBDatabase.dialect == "duckdb"
