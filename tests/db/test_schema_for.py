"""Corrector.schema_for on a warehouse (Spider databases as the schemas of one PostgreSQL database) read by
scope, as a catalogue of thousands of relations is: the relations' definitions read once, their values whole
(or, past VALUES_WHOLE_UP_TO relations, those of each question's best candidates), a DDL change seen by the
next question; and on the whole catalogue of a small database."""

from __future__ import annotations

import pytest
from test_warehouse import SCHEMAS, scoped  # noqa: F401  (scoped: a fixture, read by scope)

import sqlmend
from sqlmend import api
from sqlmend.testing.copydb import load_postgres
from pg_server import READER


@pytest.fixture(scope="module")
def warehouse(pg_server, spider_db):
    """test_warehouse's four schemas in a database of this module's."""
    pg_server.admin("CREATE DATABASE needs")
    pg_server.admin(f"GRANT CONNECT ON DATABASE needs TO {READER}")
    admin = pg_server.url("needs", user="postgres")
    for db_id in SCHEMAS:
        load_postgres(spider_db(db_id), admin, READER, schema=db_id)
    return pg_server.url("needs")


def test_a_big_catalogue_is_read_by_definitions_and_its_values_whole(warehouse, scoped):
    with sqlmend.Corrector(warehouse, stages="guard") as fixer:
        found = fixer.schema_for("Which people are from Russia?", budget=512)
        assert fixer._linked.large and fixer._linked.values is not None
        again = fixer.schema_for("Which people are from Russia?", budget=512)
    assert found.tables[0] == "poker_player.people" and found.relations == 11
    assert found.values == {"poker_player.people.nationality": ["Russia"],
                            "company_employee.company.headquarters": ["Russia"]}
    assert again.to_dict() == found.to_dict() and len(found.text) <= 512


def test_past_the_limit_the_values_of_the_best_candidates_are_read(warehouse, scoped, monkeypatch):
    monkeypatch.setattr(api, "VALUES_WHOLE_UP_TO", 2)
    with sqlmend.Corrector(warehouse, stages="guard") as fixer:
        found = fixer.schema_for("Who is from Russia?", "SELECT name FROM people WHERE nationality = 'Russia'",
                                 budget=512)
        assert fixer._linked.values is None
    assert found.tables[0] == "poker_player.people"
    assert found.values["poker_player.people.nationality"] == ["Russia"]


def test_the_draft_written_without_its_schema_finds_its_tables(warehouse, scoped):
    with sqlmend.Corrector(warehouse, stages="guard") as fixer:
        found = fixer.schema_for("Sales of each song", "SELECT title, sales FROM song", budget=1024)
    assert found.tables[:2] == ["singer.song", "singer.singer"]
    assert "singer.song(song_id int PK, title text, singer_id int -> singer.singer.singer_id" in found.text


def test_a_ddl_change_is_seen_by_the_next_question(pg_server, warehouse, scoped):
    with sqlmend.Corrector(warehouse, stages="guard") as fixer:
        before = fixer.schema_for("What are the heights of the people?", budget=1024)
        assert "poker_player.people.height" in before.columns
        pg_server.admin("ALTER TABLE poker_player.people RENAME COLUMN height TO stature", dbname="needs")
        try:
            after = fixer.schema_for("What are the heights of the people?", budget=1024)
        finally:
            pg_server.admin("ALTER TABLE poker_player.people RENAME COLUMN stature TO height", dbname="needs")
    assert "poker_player.people.stature" in after.columns and "poker_player.people.height" not in after.columns


def test_a_small_database_is_read_whole(spider_db):
    with sqlmend.Corrector(spider_db("world_1"), stages="guard") as fixer:
        found = fixer.schema_for("What languages are spoken in Aruba?", budget=1024)
        assert not fixer._linked.large
        with pytest.raises(sqlmend.errors.ConfigError, match="budget"):
            fixer.schema_for("x", budget=100)
    assert found.tables[:2] in (["countrylanguage", "country"], ["country", "countrylanguage"])
    assert found.values == {"country.Name": ["Aruba"], "country.LocalName": ["Aruba"]}


@pytest.mark.mysql
def test_a_mariadb_database_answers_too(mysql_spider):
    """MySQL's connection keeps its server's version string as ``version``: the catalogue's version the
    Corrector keys its index by is another name (``catalogue_version``), so schema_for runs there too."""
    with sqlmend.Corrector(mysql_spider("concert_singer"), stages="guard") as fixer:
        found = fixer.schema_for("What is the name of the stadium with the most capacity?", budget=1024)
    assert found.tables[0] == "stadium" and "stadium.Capacity" in found.columns
