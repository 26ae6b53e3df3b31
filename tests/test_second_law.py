"""The second law on real databases: a repair of a query the engine refuses keeps what the question names,
drops no clause and adds no table the query does not ask for, from every stage; a rename a rule proves is
the exception (sqlmend.guard.SecondLaw, pipeline._admitted, the search's candidates)."""

from __future__ import annotations

import json
import random
import sqlite3

import pytest

from sqlmend import guard
from sqlmend.db import connect
from sqlmend.llm import ReplayBackend
from sqlmend.pipeline import Pipeline, PipelineConfig
from sqlmend.types import Task


@pytest.fixture()
def open_db(spider_db):
    opened = []

    def get(db_id):
        opened.append(connect(str(spider_db(db_id))))
        return opened[-1]

    yield get
    for db in opened:
        db.close()


def test_a_rename_keeps_the_law(open_db):
    law = guard.SecondLaw(open_db("singer"), "SELECT Name FROM singers WHERE Birth_Years = 1948",
                          "Who was born in 1948?")
    assert law.check("SELECT Name FROM singer WHERE Birth_Year = 1948") is None


def test_a_dropped_predicate_or_value_breaks_it(open_db):
    db = open_db("singer")
    original = "SELECT Name FROM singer WHERE Birth_Years = 1948 OR Birth_Years = 1949"
    law = guard.SecondLaw(db, original, "Who was born in 1948 or 1949?")
    assert "drops what the question names (1949)" in law.check("SELECT Name FROM singer WHERE Birth_Year = 1948")
    law = guard.SecondLaw(db, original, "")
    assert "WHERE/HAVING predicate (2 -> 1)" in law.check("SELECT Name FROM singer WHERE Birth_Year = 1948")
    assert "GROUP BY item (1 -> 0)" in guard.second_law(
        db, "SELECT Citizenship, count(*) FROM singers GROUP BY Citizenship", "SELECT Citizenship, count(*) FROM singer")


def test_a_dropped_aggregate_breaks_it(open_db):
    why = guard.second_law(open_db("tvshow"),
                           "SELECT Language FROM TV_Channel GROUP BY Language HAVING count(*) = "
                           "(SELECT min(count(*)) FROM TV_Channel GROUP BY Language)",
                           "SELECT Language FROM TV_Channel GROUP BY Language HAVING count(*) = "
                           "(SELECT count(*) FROM TV_Channel GROUP BY Language)")
    assert "aggregate function (3 -> 2)" in why


def test_a_table_the_query_asks_for_may_join_an_unrelated_one_may_not(open_db):
    db = open_db("pets_1")
    original = "SELECT count(*) FROM Student WHERE PetType = 'dog'"  # PetType is a column of Pets
    asked = ("SELECT count(*) FROM Student JOIN Has_Pet ON Student.StuID = Has_Pet.StuID "
             "JOIN Pets ON Has_Pet.PetID = Pets.PetID WHERE PetType = 'dog'")  # Has_Pet: the bridge
    assert guard.second_law(db, original, asked) is None
    unrelated = "SELECT count(*) FROM Student JOIN Has_Pet ON Student.StuID = Has_Pet.StuID WHERE Sex = 'dog'"
    assert "adds a table the query does not ask for (has_pet)" in guard.second_law(
        db, "SELECT count(*) FROM Student WHERE Gender = 'dog'", unrelated)


def test_the_search_keeps_a_failing_query_rather_than_drop_its_filter(spider_db):
    """No schema name is like ``zodiac``: every candidate drops the filter or swaps in another column's
    meaning. Before the second law the search answered with the count of all singers."""
    t = Task("z", "singer", "How many singers have the zodiac sign Leo?",
             "SELECT count(*) FROM singer WHERE zodiac = 'Leo'", db=str(spider_db("singer")))
    c = Pipeline(PipelineConfig()).correct(t)
    assert c.sql == t.sql
    search = next(s for s in c.stages if s.stage == "search")
    assert search.detail["second_law"]["held"] >= 1
    assert any("drops" in h["why"] for h in search.detail["second_law"]["first"])


def test_a_model_rewrite_of_a_failing_query_keeps_the_law(spider_db):
    recorded = ReplayBackend.scripted([json.dumps({"sql": "SELECT count(*) FROM singer", "addressed": [],
                                                   "no_change": False})] * 4)
    t = Task("m", "singer", "How many singers have the zodiac sign Leo?",
             "SELECT count(*) FROM singer WHERE zodiac = 'Leo'", db=str(spider_db("singer")))
    c = Pipeline(PipelineConfig(stages=["static", "refine", "guard"]),
                 resolve=lambda stage: recorded if stage == "refiner" else None).correct(t)
    refine = next(s for s in c.stages if s.stage == "refine")
    assert c.sql == t.sql and refine.candidate == "SELECT count(*) FROM singer"
    assert not refine.verdict.accepted and "second law" in refine.detail["rejected"]


@pytest.fixture()
def shop(tmp_path):
    """The issue's own database: customer(id, name, city, country, segment, email), orders(...)."""
    path = tmp_path / "shop.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT, city TEXT, country TEXT, segment TEXT, email TEXT);
        CREATE TABLE orders(id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customer(id), status TEXT,
                            amount REAL, placed TEXT);""")
    rng = random.Random(0)
    for i in range(1, 41):
        conn.execute("INSERT INTO customer VALUES (?,?,?,?,?,?)", (i, f"Customer {i}", f"City {i % 7}",
                     ["France", "Germany", "Spain", "Italy"][i % 4], ["retail", "corporate"][i % 2], f"c{i}@x.com"))
    for i in range(1, 201):
        conn.execute("INSERT INTO orders VALUES (?,?,?,?,?)", (i, rng.randint(1, 40), rng.choice(
            ["pending", "shipped", "delivered"]), round(rng.uniform(5, 500), 2), f"2024-03-{1 + i % 28:02d}"))
    conn.commit()
    conn.close()
    return str(path)


@pytest.mark.parametrize(("sql", "fixed"), [
    ("SELECT count(*) FROM customers WHERE country = 'France'", "SELECT COUNT(*) FROM customer WHERE country = 'France'"),
    ("SELECT count(*) FROM orders WHERE state = 'pending'", "SELECT COUNT(*) FROM orders WHERE status = 'pending'"),
    ("SELECT mail FROM customer WHERE id = 5", "SELECT email FROM customer WHERE id = 5"),
    ("SELECT count(*) FROM order WHERE status = 'pending'", "SELECT COUNT(*) FROM orders WHERE status = 'pending'"),
])
def test_the_names_users_bring_are_fixed_by_the_schema(shop, sql, fixed):
    c = Pipeline(PipelineConfig()).correct(Task("q", "shop", "", sql, db=shop))
    assert c.sql == fixed
    static = c.stages[0]
    assert static.verdict.accepted and {f.code for f in static.findings} & {"TB01", "AT01"}
