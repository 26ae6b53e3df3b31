"""The errors users bring, corrected by the default pipeline (no model): another dialect's SQL, a
literal in another form than the column stores, a model's raw answer. On Spider's world_1 and on a
small database of one's own (customers and orders, dates stored as '2024-03-15'). Every fix keeps
the query's clauses: the right rows for the right reason."""

from __future__ import annotations

import sqlite3

import pytest

from sqlmend import Corrector

# the issue's twelve broken queries on world_1: (written, corrected, a rule that proves it)
TWELVE = [
    ("SELECT TOP 3 Name FROM country ORDER BY Population DESC",
     "SELECT Name FROM country ORDER BY Population DESC LIMIT 3", "EX04"),
    ("SELECT Name FROM country WHERE Name ILIKE '%united%'",
     "SELECT Name FROM country WHERE LOWER(Name) LIKE LOWER('%united%')", "EX04"),
    ("SELECT Name FROM country ORDER BY Population DESC FETCH FIRST 5 ROWS ONLY",
     "SELECT Name FROM country ORDER BY Population DESC LIMIT 5", "EX04"),
    ("SELECT UCASE(Name) FROM country WHERE Continent = 'Europe'",
     "SELECT UPPER(Name) FROM country WHERE Continent = 'Europe'", "EX04"),
    ("SELECT Name FROM country WHERE LEN(Name) > 20", "SELECT Name FROM country WHERE LENGTH(Name) > 20", "EX04"),
    ("SELECT AVG(Population::numeric) FROM city", "SELECT AVG(CAST(Population AS REAL)) FROM city", "EX04"),
    ("SELECT CONCAT(Name, ' ', Continent) FROM country WHERE Population > 100000000",
     "SELECT Name || ' ' || Continent FROM country WHERE Population > 100000000", "EX04"),
    ("SELECT Name FROM country WHERE CONTAINS(Name, 'land')",
     "SELECT Name FROM country WHERE Name LIKE '%land%'", "EX04"),
    ("SELECT count(*) FROM country WHERE IndepYear != NULL",
     "SELECT COUNT(*) FROM country WHERE NOT IndepYear IS NULL", "CD02"),
    ("SELECT Language FROM countrylanguage WHERE IsOfficial = TRUE AND CountryCode = 'FRA'",
     "SELECT Language FROM countrylanguage WHERE IsOfficial = 'T' AND CountryCode = 'FRA'", "VL10"),
    ("```sql\nSELECT Name FROM country WHERE Continent = 'Asia';\n```",
     "SELECT Name FROM country WHERE Continent = 'Asia'", "EX05"),
    ("Here is the query: SELECT count(*) FROM city WHERE District = 'California';",
     "SELECT count(*) FROM city WHERE District = 'California'", "EX05"),
    # text that matches exactly one stored value once accents are folded
    ("SELECT Population FROM city WHERE Name = 'Sao Paulo'", "SELECT Population FROM city WHERE Name = 'São Paulo'",
     "VL12"),
    ("SELECT Population FROM city WHERE Name = 'Zurich'", "SELECT Population FROM city WHERE Name = 'Zürich'", "VL12"),
    ("SELECT Population FROM city WHERE Name = 'Montreal'", "SELECT Population FROM city WHERE Name = 'Montréal'",
     "VL12"),
]


@pytest.fixture(scope="module")
def world(spider_db):
    with Corrector(str(spider_db("world_1")), models=lambda stage: None) as fixer:
        yield fixer


@pytest.mark.parametrize(("written", "corrected", "code"), TWELVE, ids=[t[0][:40] for t in TWELVE])
def test_the_issues_broken_queries_are_fixed(world, written, corrected, code):
    result = world.correct("q", written)
    assert result.sql == corrected, result.explain()
    assert code in {f.code for f in result.findings}


# --- a database of one's own ----------------------------------------------------------------

ORDERS = [(i, 1 + i % 4, ("pending", "shipped", "cancelled")[i % 3], 10.0 * i,
           f"{2023 + i % 2}-{1 + i % 12:02d}-{1 + (3 * i) % 28:02d}") for i in range(1, 41)] + [
    (41, 2, "pending", 99.0, "2024-03-15")]


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    path = tmp_path_factory.mktemp("shop") / "shop.sqlite"
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT, city TEXT, country TEXT, segment TEXT, email TEXT);
        CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customer(id), status TEXT,
                             amount REAL, placed DATE);
    """)
    con.executemany("INSERT INTO customer VALUES (?, ?, ?, ?, ?, ?)",
                    [(1, "Ana", "Lyon", "France", "retail", "ana@x.org"), (2, "Bo", "Zürich", "Switzerland",
                     "retail", "bo@x.org"), (3, "Cy", "Montréal", "Canada", "b2b", None),
                     (4, "Di", "Paris", "France", "b2b", "di@x.org")])
    con.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?)", ORDERS)
    con.commit()
    con.close()
    with Corrector(str(path), models=lambda stage: None) as fixer:
        yield fixer, path


def _rows(path, text):
    con = sqlite3.connect(path)
    try:
        return sorted(con.execute(text).fetchall())
    finally:
        con.close()


OWN = [
    ("SELECT count(*) FROM orders WHERE strftime('%Y', placed) = 2024",
     "SELECT COUNT(*) FROM orders WHERE CAST(STRFTIME('%Y', placed) AS INTEGER) = 2024",
     "SELECT count(*) FROM orders WHERE placed LIKE '2024-%'", "VL13"),
    ("SELECT count(*) FROM orders WHERE placed >= '2024/03/01'",
     "SELECT COUNT(*) FROM orders WHERE placed >= '2024-03-01'",
     "SELECT count(*) FROM orders WHERE placed >= '2024-03-01'", "VL11"),
    ("SELECT id FROM orders WHERE placed = '03/15/2024'", "SELECT id FROM orders WHERE placed = '2024-03-15'",
     "SELECT 41", "VL11"),
    ("SELECT count(*) FROM orders WHERE YEAR(placed) = 2024",
     "SELECT COUNT(*) FROM orders WHERE CAST(STRFTIME('%Y', placed) AS INTEGER) = 2024",
     "SELECT count(*) FROM orders WHERE placed LIKE '2024-%'", "EX04"),
    ("SELECT name FROM customer WHERE email = NULL", "SELECT name FROM customer WHERE email IS NULL",
     "SELECT name FROM customer WHERE email IS NULL", "CD02"),
    ("SELECT count(*) FROM customer WHERE city = 'zurich'", "SELECT COUNT(*) FROM customer WHERE city = 'Zürich'",
     "SELECT count(*) FROM customer WHERE city = 'Zürich'", "VL12"),
]


@pytest.mark.parametrize(("written", "corrected", "meant", "code"), OWN, ids=[t[0][:50] for t in OWN])
def test_a_literal_in_another_form_is_bound_to_the_stored_one(shop, written, corrected, meant, code):
    fixer, path = shop
    result = fixer.correct("q", written)
    assert result.sql == corrected, result.explain()
    assert code in {f.code for f in result.findings}
    assert _rows(path, result.sql) == _rows(path, meant) != []


def test_a_rewrite_after_a_transpilation_runs_the_rules_again(world):
    # EX04 writes the query in SQLite; VL01 then finds 'europe' stored as 'Europe', on what EX04 wrote
    result = world.correct("q", "SELECT TOP 3 Name FROM country WHERE Continent = 'europe' ORDER BY Population DESC")
    assert result.sql == "SELECT Name FROM country WHERE Continent = 'Europe' ORDER BY Population DESC LIMIT 3"
    assert {"EX04", "VL01"} <= {f.code for f in result.findings}


def test_a_fenced_answer_in_another_dialect_passes_the_second_law(world):
    # the fence is taken off before any stage, EX04 transpiles the failing T-SQL, VL01 binds 'europe' on what
    # EX04 wrote: a rewrite of a failing query the strict rules prove, so the second law admits it
    result = world.correct("q", "Here is the query:\n```sql\nSELECT TOP 3 Name FROM country WHERE Continent = 'europe' "
                                "ORDER BY Population DESC;\n```")
    assert result.sql == "SELECT Name FROM country WHERE Continent = 'Europe' ORDER BY Population DESC LIMIT 3"
    assert {"EX05", "EX04", "VL01"} <= {f.code for f in result.findings}
    assert "second law" not in result.explain()


def test_a_raw_answer_holding_a_write_is_still_refused(world):
    result = world.correct("q", "```sql\nSELECT Name FROM country;\nDELETE FROM country;\n```")
    codes = {f.code for f in result.findings}
    assert {"EX05", "EX03"} <= codes
    assert result.sql == "```sql\nSELECT Name FROM country;\nDELETE FROM country;\n```"  # as given
    assert "DELETE" in result.stages[0].detail["sql"] and result.error is None
    check = world.check("q", "Sure! Here it is: DELETE FROM country")
    assert {"EX05", "EX03"} <= {f.code for f in check.findings}


def test_a_raw_answer_whose_sql_still_fails_is_returned_as_given(world):
    """The output is the input or one query that runs: the SQL taken out of a raw answer that no stage
    could make run is not returned in place of the answer (the input step says what it found)."""
    raw = "Sure, count them: SELECT ( * ) FROM city WHERE country = ' France '"
    result = world.correct("q", raw)
    assert result.sql == raw and result.error is None
    step = result.stages[0]
    assert step.stage == "input" and step.detail["sql"].startswith("SELECT ( * ) FROM city")
    assert step.detail["returned"] == "as given" and "does not run" in step.note


def test_a_date_that_reads_two_ways_is_bound_to_the_one_the_question_names(spider_conn):
    from sqlmend.rules import RuleContext, engine, get

    db = spider_conn("cre_Doc_Tracking_DB")
    text = "SELECT count(*) FROM Ref_Calendar WHERE Calendar_Date >= '05/03/1986'"
    assert get("VL11").check(RuleContext(db, text)) == []  # May 3rd or March 5th: nothing tells
    found = get("VL11").check(RuleContext(db, text, "How many days from the 5th of March, 1986 on?"))
    assert engine.apply(text, found[0].fixes) == \
        "SELECT COUNT(*) FROM Ref_Calendar WHERE Calendar_Date >= '1986-03-05'"
