"""Names by meaning and names with a word added (issue "The schema a question needs", part 1), on a database
of one's own: a literal compared with the name outranks the name's words, a word that is another column's
whole name proves nothing, and a name no schema name matches in spelling is read by meaning
(all-MiniLM-L6-v2, offline) only where the question or the data speaks for it."""

from __future__ import annotations

import sqlite3

import pytest

import sqlmend
from sqlmend.rules import meaning
from sqlmend.sql.names import match, unique

ROWS = [(1, "Abbey Road", "Parlophone", 1969, 30.5, "Ann"), (2, "Thriller", "Epic", 1982, 45.0, "Bob"),
        (3, "Kind of Blue", "Columbia", 1959, 52.25, "Cy"), (4, "Off the Wall", "Epic", 1979, 12.0, "Dee"),
        (5, "Rumours", "Warner", 1977, 9.5, "Eve"), (6, "Nevermind", "Sony", 1991, 60.0, "Flo")]


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    path = tmp_path_factory.mktemp("names") / "records.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE records (id INTEGER PRIMARY KEY, name TEXT, label TEXT, year INTEGER, "
                 "grade REAL, buyer TEXT)")
    conn.executemany("INSERT INTO records VALUES (?, ?, ?, ?, ?, ?)", ROWS)
    conn.execute("CREATE TABLE employee (id INTEGER PRIMARY KEY, full_name TEXT, salary REAL)")
    conn.executemany("INSERT INTO employee VALUES (?, ?, ?)", [(1, "Ann", 5000), (2, "Bob", 7000)])
    conn.commit()
    conn.close()
    with sqlmend.Corrector(path, stages="static,search,guard") as fixer:
        yield fixer


def test_a_word_added_is_a_head_match_and_no_edit():
    assert [(m.name, m.reason) for m in match("grade_name", [("grade", "t"), ("name", "t")])] == \
        [("grade", "head"), ("name", "words")]
    assert unique(match("District_Code", [("District", "city"), ("Name", "city")])).name == "District"
    assert match("building_boss", [("building_id", "t")]) == []  # a whole word replaced is no slip


def test_the_column_that_stores_the_literal_outranks_the_names_words(shop):
    """``label_name`` holds the whole name of ``name``: the name proves nothing, 'Sony' in ``label`` does."""
    result = shop.correct("Which records did Sony release?", "SELECT name FROM records WHERE label_name = 'Sony'")
    assert result.sql == "SELECT name FROM records WHERE label = 'Sony'"
    [at01] = [f for f in result.findings if f.code == "AT01"]
    assert at01.severity == "strict" and at01.fixes


def test_a_name_holding_two_columns_whole_names_is_read_as_the_question_says(shop):
    checked = shop.check("What is the average grade of the records?", "SELECT avg(grade_name) FROM records")
    [at01] = [f for f in checked.findings if f.code == "AT01"]
    assert not at01.fixes  # grade or name: no proof by the name
    result = shop.correct("What is the average grade of the records?", "SELECT avg(grade_name) FROM records")
    assert result.sql == "SELECT AVG(grade) FROM records"
    kept = shop.correct("What is the average of the records?", "SELECT avg(grade_name) FROM records")
    assert kept.sql == "SELECT avg(grade_name) FROM records"  # nothing says which: kept


@pytest.mark.slow
def test_a_name_by_meaning_is_read_where_the_question_says_it(shop):
    if not meaning.available():
        pytest.skip("no sentence embedder here (torch / sentence-transformers)")
    [m, *_] = meaning.matches("wage", [("salary", "employee"), ("full_name", "employee"), ("id", "employee")])
    assert (m.name, m.reason) == ("salary", "meaning")
    checked = shop.check("What is the highest salary?", "SELECT max(wage) FROM employee")
    assert not [f for f in checked.findings if f.fixes]  # by meaning: never a proof
    assert shop.correct("What is the highest salary?", "SELECT max(wage) FROM employee").sql == \
        "SELECT MAX(salary) FROM employee"
    assert shop.correct("What is the highest one?", "SELECT max(wage) FROM employee").sql == \
        "SELECT max(wage) FROM employee"  # the question does not say salary: kept


def test_loading_the_encoder_moves_every_running_items_deadline_on():
    """The embedder loads at a process's first meaning match, inside whichever item asked: that one-time
    work moves on the wall-clock deadline of every item running meanwhile (seed 0's tenth fuzz example, the
    first meaning match of its process, ran past its deadline while sentence-transformers imported), and
    the deadline still ends an item afterwards."""
    import time

    from sqlmend.db import base
    from sqlmend.errors import DeadlineExceeded

    budget = base.WorkBudget(1.0)
    before, done = budget.deadline, base._PROCESS_WORK.total
    with meaning._LOCK:
        meaning._STATE.clear()  # loaded again, as on first use
    assert [m.name for m in meaning.matches("pupil", ["student", "teacher"])][:1] == ["student"]
    moved = budget.deadline - before
    assert moved > 0 and moved == base._PROCESS_WORK.total - done
    later = base.WorkBudget(1.0)  # an item begun after the load: its deadline is its own
    assert later.deadline - later.started == pytest.approx(before - budget.started)
    budget.deadline = time.monotonic() + 0.05
    budget.check()
    time.sleep(0.06)
    with pytest.raises(DeadlineExceeded):
        budget.check()
