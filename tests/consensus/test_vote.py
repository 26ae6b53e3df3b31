"""The consensus vote and its rules on real Spider databases: other answers as evidence of error and as
repairs (sqlmend.consensus.vote)."""

from __future__ import annotations

import hashlib
import shutil

import pytest

from sqlmend.consensus import STRICT, Rule, consult
from sqlmend.consensus.vote import CLEAR_MARGIN
from sqlmend.db import connect
from sqlmend.stage import Vote

FRANCE = "How many singers are from France?"


@pytest.fixture(scope="module")
def db(spider_conn):
    return spider_conn


def test_a_suspect_query_outvoted_by_a_majority_is_replaced(db):
    c = consult(db("concert_singer"), FRANCE, "SELECT count(*) FROM singer WHERE Country = 'French'",
                ["SELECT count(*) FROM singer WHERE country = 'France'",
                 "SELECT COUNT(Singer_ID) FROM singer WHERE Country = 'France'"])
    assert c.describe() == "0 of 2 alternatives return these rows; 2 agree on others"
    assert c.against and c.vote == Vote("SELECT count(*) FROM singer WHERE Country = 'French'", k=2, agree=0)
    assert c.suspect and "VL04" in c.original.findings  # the literal is stored nowhere
    d = c.decision
    assert (d.replace, d.rule, d.tier, d.member) == (True, "strict", "suspect", 0)
    assert d.sql == "SELECT count(*) FROM singer WHERE country = 'France'"
    assert [g.members for g in c.groups] == [[0, 1]]
    assert c.p_error == pytest.approx((2 + 1 - c.original.p_correct) / 3)
    assert d.score >= 2  # the risk rule ranks the strict rule's replacements first


def test_agreement_alone_does_not_replace_a_query_nothing_suspects(db):
    """Three answers agree on other rows, but nothing of sqlmend's own suspects the original (a trusted
    query of Spider dev, q242, that the gold agrees with) and the verifier does not prefer their answer by
    the clear margin: the strict rule keeps it."""
    original = ("SELECT airlines.airline FROM flights JOIN airlines ON flights.airline = airlines.uid "
                "GROUP BY flights.airline HAVING count(*) >= 10")
    c = consult(db("flight_2"), "Which airlines have at least 10 flights?", original,
                ["SELECT airline FROM flights GROUP BY airline HAVING COUNT(*) >= 10",
                 "SELECT Airline FROM flights GROUP BY Airline HAVING count(*) >= 10",
                 "SELECT Airline FROM flights GROUP BY Airline HAVING COUNT(FlightNo) >= 10"])
    assert c.against and not c.suspect
    assert not c.decision.replace and f"does not prefer it by {CLEAR_MARGIN:g}" in c.decision.why
    assert c.decision.score is not None and c.candidate == 0  # the risk rule would score it


def test_a_majority_the_verifier_backs_clearly_replaces_a_query_nothing_suspects(db):
    """GPT-4 zero-shot's answer to Spider dev q194 returns every column; the other four systems agree on the
    airline's name, and the verifier prefers their answer by more than the clear margin: the majority tier."""
    c = consult(db("flight_2"), "Give the airline with abbreviation 'UAL'.",
                "SELECT * FROM airlines WHERE Abbreviation = 'UAL'",
                ["SELECT airline FROM airlines WHERE abbreviation = 'UAL';",
                 "SELECT Airline FROM airlines WHERE Abbreviation = 'UAL'",
                 "SELECT Airline FROM airlines WHERE Abbreviation = 'UAL' LIMIT 5"])
    assert not c.suspect and c.vote.agree == 0
    d = c.decision
    assert (d.replace, d.rule, d.tier, d.member) == (True, "strict", "majority", 0)
    assert c.alternatives[0].p_correct >= c.original.p_correct + CLEAR_MARGIN
    assert d.why.startswith(f"the verifier prefers their answer by {CLEAR_MARGIN:g} or more and 3 of 3")
    # two of three agreeing is still a strict majority; one alternative alone is not
    two = consult(db("flight_2"), "Give the airline with abbreviation 'UAL'.",
                  "SELECT * FROM airlines WHERE Abbreviation = 'UAL'",
                  ["SELECT airline FROM airlines WHERE abbreviation = 'UAL';",
                   "SELECT Airline FROM airlines WHERE Abbreviation = 'UAL'",
                   "SELECT Country FROM airlines WHERE Abbreviation = 'UAL'"])
    assert two.decision.replace and two.decision.tier == "majority"
    one = consult(db("flight_2"), "Give the airline with abbreviation 'UAL'.",
                  "SELECT * FROM airlines WHERE Abbreviation = 'UAL'",
                  ["SELECT airline FROM airlines WHERE abbreviation = 'UAL';"])
    assert not one.decision.replace and "nothing of sqlmend's own suspects the original" in one.decision.why


def test_the_same_rows_in_another_column_order_are_an_agreement(db):
    c = consult(db("pets_1"), "Find the average and maximum age for each type of pet.",
                "SELECT AVG(pet_age), MAX(pet_age), PetType FROM Pets GROUP BY PetType",
                ["SELECT pettype, AVG(pet_age), MAX(pet_age) FROM pets GROUP BY pettype"])
    assert c.vote.agree == 0 and c.groups[0].reordered and not c.against
    assert c.describe().startswith("0 of 1 alternative returns these rows (1 in another column order)")
    assert not c.decision.replace and c.candidate is None


def test_an_original_that_fails_to_run_takes_one_alternative(db):
    c = consult(db("concert_singer"), "What are the names of the singers?", "SELECT nam FROM singer",
                ["SELECT Name FROM singer"])
    assert c.original.status == "failed" and (c.decision.replace, c.decision.tier) == (True, "fails")


def test_a_replacement_that_drops_what_the_question_names_is_refused(db):
    c = consult(db("concert_singer"), "How many singers are older than 30?",
                "SELECT count(*) FROM singer WHERE Age > 30 AND Country = 'nowhere'",
                ["SELECT count(*) FROM singer", "SELECT COUNT(*) FROM singer"])
    assert c.suspect and c.against and not c.decision.replace
    assert "drops what the question names (30)" in c.decision.why


def test_an_alternative_a_strict_rule_proves_wrong_does_not_vote(db):
    c = consult(db("concert_singer"), "What are the names of the singers from France?",
                "SELECT Name FROM singer WHERE Age > 40",
                ["SELECT Name FROM singer WHERE Country = 'france'", "SELECT name FROM singer WHERE country = 'france'"])
    assert all(a.strict == ["VL01"] for a in c.alternatives)
    assert [g.votes for g in c.groups] == [0] and not c.decision.replace
    assert "(2 proven wrong)" in c.describe()


def test_hostile_alternatives_are_reported_and_never_run(tmp_path, spider_db):
    path = tmp_path / "concert_singer.sqlite"
    shutil.copyfile(spider_db("concert_singer"), path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    hostile = ["DELETE FROM singer", "SELECT Name FROM singer; DROP TABLE singer", "UPDATE singer SET Age = 0",
               "ATTACH DATABASE 'x.db' AS x", "SELECT readfile('/etc/passwd')", "", "PRAGMA writable_schema = 1"]
    ran = []
    with connect(str(path)) as conn:
        def run(text, timeout):
            ran.append(text)
            return conn.execute(text, timeout=timeout), None

        c = consult(conn, "How many singers are there?", "SELECT count(*) FROM singer", hostile, run=run)
    assert ran == ["SELECT count(*) FROM singer"]  # the original only: no alternative was sent to the engine
    assert [a.status for a in c.alternatives] == ["refused"] * 5 + ["empty", "refused"]
    assert all(a.error.endswith("never run") for a in c.alternatives if a.status == "refused")
    assert not c.groups and not c.decision.replace and "(6 refused, 1 empty)" in c.describe()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_an_alternative_in_a_raw_answer_is_read_as_its_sql_and_a_fenced_write_stays_refused(db):
    """A model's raw answer as an alternative (a markdown fence, a sentence) is read as the SQL in it,
    as the input is (EX05); what it wraps passes the same read-only check."""
    c = consult(db("concert_singer"), FRANCE, "SELECT count(*) FROM singer WHERE Country = 'French'",
                ["```sql\nSELECT count(*) FROM singer WHERE country = 'France';\n```",
                 "Here is the query: SELECT COUNT(Singer_ID) FROM singer WHERE Country = 'France'; it counts them.",
                 "```sql\nDELETE FROM singer\n```"])
    assert [a.sql for a in c.alternatives[:2]] == ["SELECT count(*) FROM singer WHERE country = 'France'",
                                                  "SELECT COUNT(Singer_ID) FROM singer WHERE Country = 'France'"]
    assert [a.status for a in c.alternatives] == ["ok", "ok", "refused"]
    assert c.decision.replace and c.decision.sql == "SELECT count(*) FROM singer WHERE country = 'France'"


def test_the_risk_rule_replaces_from_its_threshold_on(db):
    args = (db("flight_2"), "Which airlines have at least 10 flights?",
            "SELECT airlines.airline FROM flights JOIN airlines ON flights.airline = airlines.uid "
            "GROUP BY flights.airline HAVING count(*) >= 10",
            ["SELECT airline FROM flights GROUP BY airline HAVING COUNT(*) >= 10",
             "SELECT Airline FROM flights GROUP BY Airline HAVING count(*) >= 10"])
    score = consult(*args).decision.score
    # (2 votes - 0 agreeing + P(alternative) - P(original)) / (k + 1)
    assert 0.6 < score < 0.7
    assert consult(*args, rule=Rule("risk", score)).decision.replace
    low = consult(*args, rule=Rule("risk", score + 1e-6)).decision
    assert not low.replace and low.rule == "risk" and "< the threshold" in low.why
    never = consult(*args, rule=Rule("risk", None)).decision
    assert not never.replace
    assert STRICT.name == "strict"


def test_the_risk_rule_takes_no_candidate_the_majority_of_all_answers_does_not_back(db):
    """As self-consistency counts: the original is a vote too, and ties go to it."""
    conn, q, o = db("concert_singer"), "How many singers are there?", "SELECT count(*) FROM singer"
    other = "SELECT count(*) FROM singer WHERE Age > 40"
    assert consult(conn, q, o, [other]).candidate is None  # 1 against 1
    assert consult(conn, q, o, [o.lower(), other, other]).candidate is None  # 2 against 2
    backed = consult(conn, q, o, [other, other])  # 2 against 1
    assert backed.candidate == 0 and backed.decision.score is not None and not backed.decision.replace
