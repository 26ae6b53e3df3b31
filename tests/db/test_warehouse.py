"""A warehouse: Spider databases as the schemas of one PostgreSQL (and one DuckDB) database, the same table
names in several schemas. A name the search path does not find is resolved by the whole query (its columns,
the tables it joins, the literals its columns store), a repair never joins two schemas the query did not
name, and an item of a big catalogue reads its scope, not the catalogue (issue "Warehouses")."""

from __future__ import annotations

import pytest

import sqlmend
from sqlmend.testing.copydb import load_duckdb, load_postgres
from sqlmend.db import connect, scope
from sqlmend.db.base import forget
from sqlmend.guard import joined_schemas
from sqlmend.sql.names import NameIndex, match
from pg_server import READER

#: Spider databases that share table names: people (poker_player, company_employee), singer (singer,
#: concert_singer), and a song table in singer alone.
SCHEMAS = ("concert_singer", "singer", "poker_player", "company_employee")


@pytest.fixture(scope="module")
def pg_warehouse(pg_server, spider_db):
    pg_server.admin("CREATE DATABASE warehouse")
    pg_server.admin(f"GRANT CONNECT ON DATABASE warehouse TO {READER}")
    for db_id in SCHEMAS:
        load_postgres(spider_db(db_id), pg_server.url("warehouse", user="postgres"), READER, schema=db_id)
    return pg_server.url("warehouse")


@pytest.fixture(scope="module")
def duck_warehouse(spider_db, tmp_path_factory):
    target = tmp_path_factory.mktemp("warehouse") / "warehouse.duckdb"
    for db_id in SCHEMAS:
        load_duckdb(spider_db(db_id), target, schema=db_id)
    return f"duckdb:///{target}"


@pytest.fixture
def scoped(monkeypatch, cache_root):
    """Read the warehouse by scope, as a catalogue of thousands of relations is (its 11 relations are few)."""
    monkeypatch.setattr(scope, "SCOPE_ABOVE", 4)
    forget()
    yield
    forget()


@pytest.fixture(params=["postgres", "duckdb"])
def warehouse(request, pg_warehouse, duck_warehouse, scoped):
    return pg_warehouse if request.param == "postgres" else duck_warehouse


def test_a_join_is_read_from_the_one_schema_that_holds_both_tables(warehouse):
    """``singer`` lives in two schemas, ``song`` in one: the whole query fits singer alone, so TB01 proves
    both names (never ``concert_singer.singer JOIN singer.song``)."""
    wrong = ("SELECT DISTINCT T1.Name FROM singer AS T1 JOIN song AS T2 ON T1.Singer_ID = T2.Singer_ID "
             "WHERE T2.Sales > 300000")
    with sqlmend.Corrector(warehouse, stages="static,guard") as fixer:
        result = fixer.correct("Names of singers with songs selling over 300000", wrong)
    assert result.sql == ("SELECT DISTINCT T1.Name FROM singer.singer AS T1 JOIN singer.song AS T2 "
                          "ON T1.Singer_ID = T2.Singer_ID WHERE T2.Sales > 300000")
    tb01 = [f for f in result.findings if f.code == "TB01"]
    assert tb01 and all(f.severity == "strict" and f.fixes for f in tb01)


def test_a_column_only_one_schemas_table_has_proves_it(warehouse):
    wrong = "SELECT Citizenship, count(*) FROM singer GROUP BY Citizenship"
    with sqlmend.Corrector(warehouse, stages="static,guard") as fixer:
        result = fixer.correct("How many singers of each citizenship?", wrong)
    assert result.sql == "SELECT Citizenship, COUNT(*) FROM singer.singer GROUP BY Citizenship"


def test_the_literal_a_schema_stores_ranks_it_first_for_the_search(warehouse):
    """Both ``people`` tables have Name and Nationality: no proof; poker_player's stores 'Russia', so the
    search is offered that schema alone."""
    wrong = "SELECT Name FROM people WHERE Nationality = 'Russia'"
    with sqlmend.Corrector(warehouse, stages="static,search,guard") as fixer:
        checked = fixer.check("Who is from Russia?", wrong)
        result = fixer.correct("Who is from Russia?", wrong)
    [tb01] = [f for f in checked.findings if f.code == "TB01"]
    assert not tb01.fixes and not tb01.evidence["tied"]
    assert tb01.evidence["schemas"][0].startswith("poker_player (fits; stores 1 literal(s)")
    assert result.sql == "SELECT Name FROM poker_player.people WHERE Nationality = 'Russia'"


def test_schemas_that_tie_keep_the_query_with_the_candidates_in_the_trace(warehouse):
    wrong = "SELECT count(*) FROM people"
    with sqlmend.Corrector(warehouse) as fixer:
        result = fixer.correct("How many people are there?", wrong)
    assert result.sql == wrong and not result.changed
    [tb01] = [f for f in result.findings if f.code == "TB01"]
    assert tb01.evidence["tied"] and len(tb01.evidence["schemas"]) == 2
    assert "tie on the query's evidence: kept" in result.explain()


def test_a_repair_never_joins_a_schema_the_query_does_not_name(warehouse):
    with connect(warehouse) as db:
        assert joined_schemas(db, "SELECT * FROM singer AS a JOIN song AS b ON a.singer_id = b.singer_id",
                              "SELECT * FROM concert_singer.singer AS a JOIN singer.song AS b "
                              "ON a.singer_id = b.singer_id").startswith("it joins tables of schemas")
        assert joined_schemas(db, "SELECT * FROM singer.singer", "SELECT * FROM singer.singer JOIN singer.song "
                              "ON 1 = 1") is None
    wrong = "SELECT count(*) FROM concert_singer.singer AS s JOIN people AS p ON s.Name = p.Name"
    with sqlmend.Corrector(warehouse) as fixer:
        result = fixer.correct("How many singers are people?", wrong)
    assert result.sql == wrong  # people lives in poker_player and company_employee: no join across schemas


def test_an_item_reads_its_scope_not_the_catalogue(pg_warehouse, scoped):
    """The scope of a query on a big catalogue: the relations it names, each schema's table for a name it
    invents, their neighbours by foreign key; the value index holds those relations alone."""
    with connect(pg_warehouse) as db:
        index = db.catalogue_index()
        assert index.relations(["SELECT * FROM people"], "postgres") == [  # each schema's, and who refers to it
            "company_employee.employment", "company_employee.people", "poker_player.people"]
        keys = index.relations(["SELECT * FROM singer.song"], "postgres")
        assert keys == ["singer.singer", "singer.song"]  # song's foreign key to singer
        with db.scoped(keys):
            assert [t.name for t in db.schema().tables] == keys
            assert all(t.row_count is not None for t in db.schema().tables)
            assert {t for t, _ in db.value_index().columns()} == set(keys)
        assert len(db.schema().tables) == 11  # outside the item: the catalogue


def test_a_name_index_answers_what_a_scan_of_every_name_answers(pg_warehouse):
    with connect(pg_warehouse) as db:
        keys = [t.name for t in db.schema().tables]
        columns = sorted({c.name for t in db.schema().tables for c in t.columns})
    index = NameIndex(keys)
    for unknown in [*keys, "people", "singers", "Song", "stadiums", "concert_singer_singer", "poker_players",
                    "compny", *columns]:
        assert index.match(unknown) == match(unknown, keys), unknown
